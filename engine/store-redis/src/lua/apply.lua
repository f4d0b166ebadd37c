-- Applies an owner's changes to a shard, fenced: nothing happens unless the shard's owner and fencing token are
-- still this process's. ARGV[3]: process id; ARGV[4]: its token; ARGV[5..7]: the number of finished URLs, updates
-- and records; ARGV[9]: the number of reschedules; then five arguments per finished URL (member, host fp, depth,
-- seq, "1" when it counts as a fetched page), six per update (member, host fp, depth, seq, element head, URL), two
-- per record (sequence number, line), eight per reschedule (member, URL fp as 8 bytes LE, due time in Unix
-- seconds, host fp, host fp as 8 bytes LE, depth, element head with the prior visit, URL).
-- A finished URL's element leaves its list, and with it its share of its parent's row; an update rewrites the
-- element in place. Both find the element near the head of its list (the owner holds a prefix of every list), so
-- they cost what the owner holds, never the queue's length. Finishing twice counts once, and an update of a
-- finished URL does not bring it back. A reschedule puts its URL in the shard's schedule (sched.lua) only when this
-- call finished it, so a URL is scheduled once per finish. Each record is appended to the shard's stream and, in
-- the same script, read into this process's pending entries. ARGV[8]: the commit's nonce (unique per process run
-- and commit): a call run again after its reply was lost (a client retry) applies nothing twice and returns the
-- first run's reply. Every commit that applies raises the shard's epoch, which every process remembers: a shard
-- whose epoch went back lost commits (a failover to a replica that did not have them). Returns {1, done, pages,
-- epoch, URLs scheduled that were not, stream ids...} or {0} when fenced.
local last = redis.call('HMGET', meta, 'an:' .. ARGV[3], 'ar:' .. ARGV[3])
if last[1] == ARGV[8] and last[2] then
  local again = {1}
  for v in string.gmatch(last[2], '[^,]+') do
    again[#again + 1] = v
  end
  return again
end
local o = redis.call('HMGET', meta, 'owner', 'token')
if o[1] ~= ARGV[3] or o[2] ~= ARGV[4] then
  return {0}
end
local nf, nu, nr, ns = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[9]) or 0
local i = 10
local done, pages = 0, 0
pend_load()
local pend_before = pend_n
local groups, gorder = {}, {}
for _ = 1, nf do
  local hfp, depth, seq = ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  local q = q_key(hfp, depth)
  local g = groups[q]
  if not g then
    g = {hfp = hfp, depth = depth, want = {}, max = 0}
    groups[q] = g
    gorder[#gorder + 1] = q
  end
  g.want[seq] = {ARGV[i], ARGV[i + 4]}
  if seq > g.max then
    g.max = seq
  end
  i = i + 5
end
local parents, gone, fin = {}, {}, {}
for _, q in ipairs(gorder) do
  local g = groups[q]
  local found = q_find(q, g.want, g.max)
  local n, top = 0, -1
  for s, f in pairs(found) do
    n = n + 1
    if f[1] > top then
      top = f[1]
    end
    local w = g.want[s]
    if w[2] == '1' then
      pages = pages + 1
    end
    fin[w[1]] = true
    if pend_n > 0 then
      pend_del(w[1])
    end
    local _, h = q_seq(f[2])
    local pk = q_parent_at(f[2], h)
    if pk then
      local c = parents[pk]
      if not c then
        c = {0}
        parents[pk] = c
      end
      c[1] = c[1] - 1
    end
  end
  if n > 0 and top == n - 1 then
    -- the list's first n elements (finished in queue order, the usual case)
    redis.call('LTRIM', q, n, -1)
  elseif n > 0 then
    for _, f in pairs(found) do
      redis.call('LSET', q, f[1], '')
    end
    redis.call('LREM', q, n, '')
  end
  if n > 0 then
    if redis.call('EXISTS', q) == 0 then
      redis.call('ZREM', pfx .. 'qd:' .. g.hfp, g.depth)
    end
    done = done + n
    gone[g.hfp] = (gone[g.hfp] or 0) + n
  end
end
for hfp, n in pairs(gone) do
  local name = redis.call('HGET', pfx .. 'names', hfp)
  if name and redis.call('HINCRBY', pfx .. 'hosts', name, -n) <= 0 then
    redis.call('HDEL', pfx .. 'hosts', name)
  end
end
par_apply(parents)
if pend_n ~= pend_before then
  pend_store()
end
for _ = 1, nu do
  local hfp, seq = ARGV[i + 1], tonumber(ARGV[i + 3])
  local q = q_key(hfp, ARGV[i + 2])
  local f = q_find(q, {[seq] = true}, seq)[seq]
  if f then
    redis.call('LSET', q, f[1], q_compose(seq, ARGV[i + 4], ARGV[i + 5], q_origin(hfp, nil)))
  end
  i = i + 6
end
local scheduled = 0
if ns > 0 then
  local ri, loaded = i + 2 * nr, false
  for _ = 1, ns do
    if fin[ARGV[ri]] then
      if not loaded then
        s_load()
        loaded = true
      end
      local fp, due, hfp, url = ARGV[ri + 1], tonumber(ARGV[ri + 2]), ARGV[ri + 3], ARGV[ri + 7]
      local e = fp .. s_le32(due) .. ARGV[ri + 4] .. q_varint(tonumber(ARGV[ri + 5]))
        .. q_rest(ARGV[ri + 6], url, q_origin(hfp, url))
      if s_put(fp, due, e) then
        scheduled = scheduled + 1
      end
    end
    ri = ri + 8
  end
  if loaded then
    s_store()
  end
end
if done > 0 then
  redis.call('HINCRBY', meta, 'done', done)
  redis.call('HINCRBY', meta, 'pending', -done)
  if pages > 0 then
    redis.call('HINCRBY', meta, 'pages', pages)
  end
end
local out = {1, done, pages, redis.call('HINCRBY', meta, 'epoch', 1), scheduled}
if nr > 0 then
  local stream = pfx .. 'rec'
  for _ = 1, nr do
    out[#out + 1] = redis.call('XADD', stream, '*', 's', ARGV[i], 'd', ARGV[i + 1])
    i = i + 2
  end
  redis.call('XREADGROUP', 'GROUP', 'g', ARGV[3], 'COUNT', nr, 'STREAMS', stream, '>')
end
local saved = {}
for k = 2, #out do
  saved[#saved + 1] = tostring(out[k])
end
redis.call('HSET', meta, 'an:' .. ARGV[3], ARGV[8], 'ar:' .. ARGV[3], table.concat(saved, ','))
return out
