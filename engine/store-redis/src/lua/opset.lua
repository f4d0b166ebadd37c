-- Compare-and-set of one host's operator rule in the shard's `ops` hash (operator.rs). ARGV[3]: the host (or
-- host:port); ARGV[4]: its rule as the caller read it ("" when none); ARGV[5]: its new rule ("" to remove it). When
-- the stored rule is still ARGV[4], ARGV[5] replaces it and the shard's `opv` is raised: returns {1, opv}. Else
-- nothing is written: returns {0, the stored rule ("" when none)}. Not fenced: any process may set any host's rule.
local key = pfx .. 'ops'
local cur = redis.call('HGET', key, ARGV[3]) or ''
if cur ~= ARGV[4] then
  return {0, cur}
end
if ARGV[5] == '' then
  redis.call('HDEL', key, ARGV[3])
else
  redis.call('HSET', key, ARGV[3], ARGV[5])
end
return {1, redis.call('HINCRBY', meta, 'opv', 1)}
