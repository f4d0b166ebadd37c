-- Scheduled entries of URLs (sched.lua), for sitemap hints. ARGV[3...]: URL fps (8 bytes LE). Returns per URL its
-- entry and its host queue's origin, or two empty strings when it is not scheduled.
s_load()
local out = {}
for k = 3, #ARGV do
  local d = sx_get(ARGV[k])
  local e = d and s_find(ARGV[k], d)
  if e then
    out[#out + 1] = e
    out[#out + 1] = q_origin(s_u64(e, 13), nil)
  else
    out[#out + 1] = ''
    out[#out + 1] = ''
  end
end
return out
