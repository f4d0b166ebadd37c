-- Takes over records of other processes that stayed unacknowledged for at least ARGV[4] ms, in a shard this
-- process owns. ARGV[3]: process id; ARGV[4]: minimum idle ms; ARGV[5]: how many at most; ARGV[6]: token.
-- This process's own pending records are left alone. Returns {stream id, line, ...}.
local o = redis.call('HMGET', meta, 'owner', 'token')
if o[1] ~= ARGV[3] or o[2] ~= ARGV[6] then
  return {}
end
local stream = pfx .. 'rec'
local idle = tonumber(ARGV[4])
local p = redis.call('XPENDING', stream, 'g', 'IDLE', idle, '-', '+', tonumber(ARGV[5]))
local ids = {}
for _, e in ipairs(p) do
  if e[2] ~= ARGV[3] then
    ids[#ids + 1] = e[1]
  end
end
if #ids == 0 then
  return {}
end
local out = {}
for _, e in ipairs(redis.call('XCLAIM', stream, 'g', ARGV[3], idle, unpack(ids))) do
  local f = e[2]
  if f then
    for j = 1, #f, 2 do
      if f[j] == 'd' then
        out[#out + 1] = e[1]
        out[#out + 1] = f[j + 1]
      end
    end
  end
end
return out
