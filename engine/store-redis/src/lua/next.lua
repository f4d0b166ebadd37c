-- A host's pending URLs in queue order (depth, then discovery order) after a cursor. ARGV[3]: host fp; ARGV[4],
-- ARGV[5]: the cursor's depth and seq (depth -1: from the start); ARGV[6]: how many. In the cursor's own list the
-- elements up to the cursor (those the owner holds: a prefix) are skipped, the lists of deeper depths are read
-- from their head. Returns {queue origin, depth, element, parent row ("" when none), ...}.
local hfp, cd, cs, want = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local out = {redis.call('HGET', pfx .. 'org', hfp) or ''}
local depths = redis.call('ZRANGEBYSCORE', pfx .. 'qd:' .. hfp, math.max(cd, 0), '+inf')
local got = 0
local pkeys, pidx = {}, {}
local function take(d, e)
  out[#out + 1] = d
  out[#out + 1] = e
  out[#out + 1] = ''
  got = got + 1
  local _, h = q_seq(e)
  local pk = q_parent_at(e, h)
  if pk then
    pkeys[#pkeys + 1] = pk
    pidx[#pidx + 1] = #out
  end
end
for _, d in ipairs(depths) do
  if got >= want then
    break
  end
  local q = q_key(hfp, d)
  local i = 0
  if tonumber(d) == cd then
    -- skip the held prefix, 128 at a time
    local skipping = true
    while skipping do
      local r = redis.call('LRANGE', q, i, i + 127)
      for j = 1, #r do
        if got < want and q_seq(r[j]) > cs then
          if skipping then
            skipping = false
          end
          take(d, r[j])
        end
      end
      i = i + #r
      if #r < 128 then
        i = -1
        skipping = false
      end
    end
  end
  while i >= 0 and got < want do
    local n = want - got
    local r = redis.call('LRANGE', q, i, i + n - 1)
    for j = 1, #r do
      take(d, r[j])
    end
    if #r < n then
      break
    end
    i = i + #r
  end
end
if #pkeys > 0 then
  local rows = redis.call('HMGET', pfx .. 'par', unpack(pkeys))
  for k = 1, #pkeys do
    out[pidx[k]] = rows[k] or ''
  end
end
return out
