-- Compare-and-set of the crawl's pause (operator.rs). KEYS[1]: the crawl's `op` hash; ARGV[1]: the pause as the
-- caller read it ("" when none); ARGV[2]: the new one ("" to remove it). When the stored pause is still ARGV[1],
-- ARGV[2] replaces it and the crawl's operator version `v` is raised: returns {1, v}. Else nothing is written:
-- returns {0, the stored pause ("" when none)}.
local cur = redis.call('HGET', KEYS[1], 'crawl') or ''
if cur ~= ARGV[1] then
  return {0, cur}
end
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'crawl')
else
  redis.call('HSET', KEYS[1], 'crawl', ARGV[2])
end
return {1, redis.call('HINCRBY', KEYS[1], 'v', 1)}
