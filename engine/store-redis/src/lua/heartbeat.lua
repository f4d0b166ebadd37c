-- A process's heartbeat in the crawl's members set (score: expiry in Redis server time, ms). KEYS[1]: the members
-- set; ARGV[1]: process id; ARGV[2]: lease in ms; ARGV[3]: "leave" to remove the process instead. Members gone for
-- an hour are dropped. Returns the live members.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[3] == 'leave' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 3600000)
return redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')
