-- Gives a lease up. ARGV[3]: process id; ARGV[4]: token. Returns 1, or 0 when it was not held with that token.
local o = redis.call('HMGET', meta, 'owner', 'token')
if o[1] ~= ARGV[3] or o[2] ~= ARGV[4] then
  return 0
end
redis.call('HDEL', meta, 'owner', 'token')
redis.call('HSET', meta, 'exp', 0)
return 1
