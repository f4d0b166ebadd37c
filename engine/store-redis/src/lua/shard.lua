-- Prologue of every shard script. KEYS[1]: the shard's meta hash (every other key of the shard shares its prefix
-- and hash tag); ARGV[1]: the crawl instance id; ARGV[2]: the shard number. A shard whose sentinel is missing or
-- names another crawl instance lost its data: the script touches nothing, so nothing is recreated silently.
local meta = KEYS[1]
local pfx = string.sub(meta, 1, -5)
local sentinel = redis.call('HGET', meta, 'inst')
if sentinel ~= ARGV[1] then
  if sentinel then
    return redis.error_reply('LOST shard ' .. ARGV[2] .. ' belongs to another crawl instance')
  end
  return redis.error_reply('LOST shard ' .. ARGV[2] .. ' has no sentinel')
end
