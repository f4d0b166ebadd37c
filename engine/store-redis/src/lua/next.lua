-- A host's pending URLs in queue order. ARGV[3]: host fp; ARGV[4]: the lowest score ("-inf" or "(n" for strictly
-- after n); ARGV[5]: how many. Returns {member, score, entry, ...}.
local q = pfx .. 'q:' .. ARGV[3]
local r = redis.call('ZRANGEBYSCORE', q, ARGV[4], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[5]))
if #r == 0 then
  return {}
end
local ms = {}
for i = 1, #r, 2 do
  ms[#ms + 1] = r[i]
end
local vals = redis.call('HMGET', pfx .. 'urls', unpack(ms))
local out = {}
for i = 1, #ms do
  out[#out + 1] = ms[i]
  out[#out + 1] = r[2 * i]
  out[#out + 1] = vals[i] or ''
end
return out
