-- Marks members seen without queueing them (measures the dedup layout alone). ARGV[3..]: members.
-- Returns how many were new.
seen_load(0)
local added = 0
for i = 3, #ARGV do
  if seen_mark(ARGV[i]) then
    added = added + 1
  end
end
seen_store()
return added
