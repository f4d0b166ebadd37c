-- This process's pending records in a shard's stream (committed, not acknowledged), after stream id ARGV[4].
-- ARGV[3]: process id; ARGV[5]: how many at most. Returns {stream id, sequence number, line, ...}.
local r = redis.call('XREADGROUP', 'GROUP', 'g', ARGV[3], 'COUNT', tonumber(ARGV[5]), 'STREAMS', pfx .. 'rec', ARGV[4])
local out = {}
if not r or not r[1] then
  return out
end
for _, e in ipairs(r[1][2]) do
  local f = e[2]
  if f then
    local s, d
    for j = 1, #f, 2 do
      if f[j] == 's' then
        s = f[j + 1]
      elseif f[j] == 'd' then
        d = f[j + 1]
      end
    end
    if s and d then
      out[#out + 1] = e[1]
      out[#out + 1] = s
      out[#out + 1] = d
    end
  end
end
return out
