-- Brings scheduled URLs forward (sitemap hints; sched.lua). ARGV[3...]: three per URL: its fp (8 bytes LE), the due
-- time it was read with and the earlier one it gets (Unix seconds). A URL moves only while it is still scheduled at
-- the time read, and only earlier. Not fenced: any process may move an entry of any shard, and the move is one
-- script. Returns how many moved.
s_load()
local moved = 0
for k = 3, #ARGV, 3 do
  local fp, old, new = ARGV[k], tonumber(ARGV[k + 1]), tonumber(ARGV[k + 2])
  if new < old and sx_get(fp) == old then
    local e = s_remove(fp, old)
    if e then
      s_insert(string.sub(e, 1, 8) .. s_le32(new) .. string.sub(e, 13), new)
      sx_set(fp, new)
      moved = moved + 1
    end
  end
end
if moved > 0 then
  s_store()
end
return moved
