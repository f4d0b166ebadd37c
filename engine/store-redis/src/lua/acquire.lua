-- Takes a shard's lease when it is free, expired, or held by an earlier run of this process (same process id):
-- the fencing token goes up, so whoever held it before can no longer apply anything. The token is at least the
-- server time in ms: a master promoted after a failover that lost the last grants of the old one hands out tokens
-- above every token the old one granted (its clock has moved on), never the same one again. ARGV[3]: process id;
-- ARGV[4]: lease in ms. Returns {token, expiry} or {0, current owner}. Expiry is Redis server time in ms.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local o = redis.call('HMGET', meta, 'owner', 'exp')
if o[1] and o[1] ~= ARGV[3] and (tonumber(o[2]) or 0) > now then
  return {0, o[1]}
end
local token = redis.call('HINCRBY', meta, 'fence', 1)
if token < now then
  token = now
  redis.call('HSET', meta, 'fence', token)
end
local exp = now + tonumber(ARGV[4])
redis.call('HSET', meta, 'owner', ARGV[3], 'token', token, 'exp', exp)
return {token, exp}
