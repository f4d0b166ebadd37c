-- Adds discovered URLs to a shard: for each, seen-check-and-mark, then (when new) its element at the end of its
-- host queue's list for its depth, its parent's row, the host count and the counters, all in this one script.
-- Idempotent: run twice, the second run finds every URL seen. ARGV[3]: the number of shards; ARGV[4]: the calling
-- process; ARGV[5]: the recrawl period in seconds (0: none); then seven arguments per URL: member, host fp ("0":
-- the records queue), host key, depth, element head (see queue.lua), URL, parent URL ("" when none). Returns per
-- URL its queue seq (0: already known). With recrawl, a URL still pending is never queued twice. URLs queued by a
-- process other than the shard's owner bump `hostsv`, so the owner reads the shard's hosts again at its next poll
-- (its own adds reach its windows directly).
local shards = tonumber(ARGV[3])
local shard = tonumber(ARGV[2])
local n = (#ARGV - 5) / 7
local recrawl = tonumber(ARGV[5]) or 0
local counter = tonumber(redis.call('HGET', meta, 'seq')) or 0
if (counter + n + 1) * shards + shard >= 8589934592 then
  return redis.error_reply('FULL shard ' .. ARGV[2] .. ' ran out of queue positions')
end
seen_load(recrawl)
if recrawl > 0 then
  pend_load()
end
local out = {}
local added = 0
local lists, order = {}, {}
local hosts, horder = {}, {}
local parents = {}
for i = 6, #ARGV, 7 do
  local m = ARGV[i]
  if (recrawl == 0 or not pend_has(m)) and seen_mark(m) then
    counter = counter + 1
    local seq = counter * shards + shard
    local hfp, head, url = ARGV[i + 1], ARGV[i + 4], ARGV[i + 5]
    local q = q_key(hfp, ARGV[i + 3])
    local l = lists[q]
    if not l then
      l = {hfp = hfp, depth = ARGV[i + 3]}
      lists[q] = l
      order[#order + 1] = q
    end
    l[#l + 1] = q_compose(seq, head, url, q_origin(hfp, url))
    local hk = ARGV[i + 2]
    local h = hosts[hk]
    if not h then
      h = {hfp = hfp, n = 0}
      hosts[hk] = h
      horder[#horder + 1] = hk
    end
    h.n = h.n + 1
    local pk = q_parent_at(head, 1)
    if pk then
      local c = parents[pk]
      if not c then
        c = {0, ARGV[i + 6]}
        parents[pk] = c
      end
      c[1] = c[1] + 1
    end
    if recrawl > 0 then
      pend_add(m)
    end
    added = added + 1
    out[#out + 1] = seq
  else
    out[#out + 1] = 0
  end
end
q_append(order, lists)
for _, hk in ipairs(horder) do
  local h = hosts[hk]
  if redis.call('HINCRBY', pfx .. 'hosts', hk, h.n) == h.n then
    redis.call('HSET', pfx .. 'names', h.hfp, hk)
    redis.call('HINCRBY', meta, 'hostsv', 1)
  end
end
par_apply(parents)
if added > 0 then
  if redis.call('HGET', meta, 'owner') ~= ARGV[4] then
    redis.call('HINCRBY', meta, 'hostsv', 1)
  end
  seen_store()
  if recrawl > 0 then
    pend_store()
  end
  redis.call('HSET', meta, 'seq', counter)
  redis.call('HINCRBY', meta, 'known', added)
  redis.call('HINCRBY', meta, 'pending', added)
end
return out
