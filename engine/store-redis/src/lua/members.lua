-- The crawl's live processes. KEYS[1]: the members set (score: heartbeat expiry, Redis server time in ms).
-- Returns {process id, ms until its heartbeat lapses, ...} for every member whose heartbeat has not lapsed, as
-- the heartbeat counts them. Changes nothing.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local m = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES')
local out = {}
for i = 1, #m, 2 do
  out[#out + 1] = m[i]
  out[#out + 1] = tonumber(m[i + 1]) - now
end
return out
