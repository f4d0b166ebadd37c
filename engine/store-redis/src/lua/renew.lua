-- Extends a lease this process holds. ARGV[3]: process id; ARGV[4]: token; ARGV[5]: lease in ms.
-- Returns 1, or 0 when the lease is someone else's now.
local o = redis.call('HMGET', meta, 'owner', 'token')
if o[1] ~= ARGV[3] or o[2] ~= ARGV[4] then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', meta, 'exp', now + tonumber(ARGV[5]))
return 1
