-- Whether a member was added to the shard (with recrawl: in the current or the previous generation, or it is still
-- pending). ARGV[3]: the member; ARGV[4]: the recrawl period in seconds (0: none).
local recrawl = tonumber(ARGV[4]) or 0
seen_load(recrawl)
if seen_has(ARGV[3]) or (recrawl > 0 and redis.call('HEXISTS', pfx .. 'urls', ARGV[3]) == 1) then
  return 1
end
return 0
