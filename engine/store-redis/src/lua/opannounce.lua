-- Announces a change of a shard's operator rules (operator.rs), after it was written. KEYS[1]: the crawl's `op`
-- hash; ARGV[1]: the shard; ARGV[2]: its `opv` after the change. The crawl's operator version `v` is raised and the
-- shard's announced `opv` (field `s:<shard>`) set, unless a later change of the shard was announced already.
-- Returns v.
local f = 's:' .. ARGV[1]
if (tonumber(redis.call('HGET', KEYS[1], f)) or 0) < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], f, ARGV[2])
  return redis.call('HINCRBY', KEYS[1], 'v', 1)
end
return tonumber(redis.call('HGET', KEYS[1], 'v')) or 0
