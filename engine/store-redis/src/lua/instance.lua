-- The crawl's instance key. ARGV[1] = "open": returns {1, "creating:<ARGV[2]>"} after creating it, or {0, value}
-- when it exists. ARGV[1] = "ready": marks instance ARGV[2] ready (all shards created); returns the value.
local v = redis.call('GET', KEYS[1])
if ARGV[1] == 'ready' then
  if v == 'creating:' .. ARGV[2] then
    redis.call('SET', KEYS[1], 'ready:' .. ARGV[2])
    return 'ready:' .. ARGV[2]
  end
  return v
end
if v then
  return {0, v}
end
redis.call('SET', KEYS[1], 'creating:' .. ARGV[2])
return {1, 'creating:' .. ARGV[2]}
