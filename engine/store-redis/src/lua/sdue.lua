-- The shard's schedule at a glance (sched.lua). ARGV[3]: a due time (Unix seconds; -1: none); ARGV[4]: a cap;
-- ARGV[5]: '1' to have the due times too. Returns {the earliest due time (-1 when nothing is scheduled), the
-- entries due at or before ARGV[3] counted up to the cap, then with ARGV[5] = '1' their due times as due, count,
-- ... in order}.
local _, first = w_first()
if not first then
  return {-1, 0}
end
local count, pairs = s_count(tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == '1')
local out = {first, count}
for k = 1, #pairs do
  out[#out + 1] = pairs[k]
end
return out
