-- Whether a member was added to the shard (with recrawl: in the current or the previous generation, or it is still
-- pending). ARGV[3]: the member; ARGV[4]: the recrawl period in seconds (0: none).
local recrawl = tonumber(ARGV[4]) or 0
seen_load(recrawl)
if seen_has(ARGV[3]) then
  return 1
end
if recrawl > 0 then
  pend_load()
  if pend_has(ARGV[3]) then
    return 1
  end
end
return 0
