-- A forced re-fetch looks for URLs among the elements of a host queue numbered up to a limit, a page at a time
-- (refetch.rs). ARGV[3]: the host fp (0: the shard's records queue); ARGV[4]: the limit (the shard's last sequence
-- number when the re-fetch began: what is queued later, refetch.lua looks at); ARGV[5], ARGV[6]: where the last
-- page stopped (the depth, -1 to start, and the sequence number of the last element looked at there, -1: none);
-- ARGV[7]: how many elements to look at, at most; ARGV[8...]: the URLs. Lists only lose elements and gain them at
-- their end, numbered above the limit, so a page that goes on after the last sequence number looked at misses
-- nothing. Returns {depth, sequence number} where the next page goes on ({-1, -1}: all looked at), then the
-- positions (from 1) of the URLs found.
local hfp, limit = ARGV[3], tonumber(ARGV[4])
local cd, cs, budget = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local origin = f_origin(hfp)
local want = {}
for k = 8, #ARGV do
  want[f_url_key(ARGV[k], origin)] = k - 7
end
local out = {-1, -1}
local looked = 0
for _, d in ipairs(redis.call('ZRANGEBYSCORE', pfx .. 'qd:' .. hfp, math.max(cd, 0), '+inf')) do
  local q = q_key(hfp, d)
  local i, last = 0, -1
  if tonumber(d) == cd then
    i, last = f_after(q, cs), cs
  end
  local more = true
  while more do
    if looked >= budget then
      out[1], out[2] = tonumber(d), last
      return out
    end
    local r = redis.call('LRANGE', q, i, i + 127)
    for j = 1, #r do
      local s = q_seq(r[j])
      if s > limit then
        more = false
        break
      end
      local k = want[f_key(r[j])]
      if k then
        out[#out + 1] = k
      end
      last = s
      looked = looked + 1
    end
    if #r < 128 then
      more = false
    end
    i = i + #r
  end
end
return out
