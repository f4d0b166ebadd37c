-- Creates a shard of a new crawl: its sentinel and its records stream with the consumer group. KEYS[1]: the meta
-- hash; ARGV[1]: the crawl instance id; ARGV[2]: the shard number; ARGV[3]: the layout version of the shard's keys
-- (`lay` in meta). Returns 1 when created, 0 when it was there.
local cur = redis.call('HGET', KEYS[1], 'inst')
if cur == ARGV[1] then
  return 0
end
if cur then
  return redis.error_reply('LOST shard ' .. ARGV[2] .. ' belongs to another crawl instance')
end
redis.call('HSET', KEYS[1], 'inst', ARGV[1], 'lay', ARGV[3])
redis.pcall('XGROUP', 'CREATE', string.sub(KEYS[1], 1, -5) .. 'rec', 'g', '0', 'MKSTREAM')
return 1
