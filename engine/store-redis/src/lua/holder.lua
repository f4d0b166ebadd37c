-- Who holds the shard's lease now: {process id} while its expiry (Redis server time) has not passed, else {}
-- (free, given up, or run out). Changes nothing.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local o = redis.call('HMGET', meta, 'owner', 'exp')
if o[1] and o[1] ~= '' and (tonumber(o[2]) or 0) > now then
  return {o[1]}
end
return {}
