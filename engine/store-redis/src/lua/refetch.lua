-- A forced re-fetch of URLs of the shard (refetch.rs), once rfcheck.lua and rfscan.lua looked. ARGV[3]: the number
-- of shards; ARGV[4]: the recrawl period in seconds (with one, a queued URL joins the pending set); ARGV[5]: the
-- limit rfscan.lua looked up to (elements numbered above it, queued since, are looked at here, from the end of
-- each list); then eight per URL: member, URL fp (8 bytes LE), the due time it was scheduled at when looked at (0:
-- it was done), host fp, host key, depth, element head, URL. A URL scheduled then and still scheduled at that time
-- leaves the schedule and is queued as its entry says (depth, kind, prior visit), as a promotion does; a URL done
-- then, not scheduled since and with no element queued since is queued as given. Anything else became pending
-- meanwhile and is left. Each queued URL gets a new sequence number at the end of its host queue's list for its
-- depth; the host's count and the shard's counters move, and so does the hosts version, so that the shard's owner
-- reads its hosts again at its next poll whoever queued. Returns per URL 0 (left) or {0, host fp, host key, depth,
-- element, queue origin} (as promote.lua).
local shards, shard = tonumber(ARGV[3]), tonumber(ARGV[2])
local recrawl = tonumber(ARGV[4]) or 0
local limit = tonumber(ARGV[5])
local counter = tonumber(redis.call('HGET', meta, 'seq')) or 0
if (counter + (#ARGV - 5) / 8 + 1) * shards + shard >= 8589934592 then
  return redis.error_reply('FULL shard ' .. ARGV[2] .. ' ran out of queue positions')
end
seen_load(recrawl)
pend_load()
s_load()
local pend_before = pend_n

-- True when a list of host `hfp` holds an element of `url` numbered above the limit.
local function queued_since(hfp, url)
  local key = f_url_key(url, f_origin(hfp))
  for _, d in ipairs(redis.call('ZRANGE', pfx .. 'qd:' .. hfp, 0, -1)) do
    local q = q_key(hfp, d)
    local i, more = -1, true
    while more do
      local r = redis.call('LRANGE', q, i - 127, i)
      for j = #r, 1, -1 do
        if q_seq(r[j]) <= limit then
          more = false
          break
        end
        if f_key(r[j]) == key then
          return true
        end
      end
      if #r < 128 then
        more = false
      end
      i = i - 128
    end
  end
  return false
end

local lists, order = {}, {}
local hosts, horder = {}, {}
local function add(hfp, depth, elem, name)
  local q = q_key(hfp, depth)
  local l = lists[q]
  if not l then
    l = {hfp = hfp, depth = depth}
    lists[q] = l
    order[#order + 1] = q
  end
  l[#l + 1] = elem
  local h = hosts[hfp]
  if not h then
    h = {n = 0}
    hosts[hfp] = h
    horder[#horder + 1] = hfp
  end
  h.n = h.n + 1
  h.name = h.name or name
end

local out = {}
local from_done, from_sched = 0, 0
for i = 6, #ARGV, 8 do
  local m, fp, due = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local hfp, url = ARGV[i + 3], ARGV[i + 7]
  local item = 0
  if seen_has(m) and not (pend_n > 0 and pend_has(m)) then
    local d = sx_get(fp)
    if due > 0 then
      local e = d == due and s_remove(fp, d)
      if e then
        sx_del(fp)
        local ehfp = s_u64(e, 13)
        local depth, at = s_depth(e)
        counter = counter + 1
        local elem = q_varint(counter * shards + shard) .. string.sub(e, at)
        add(ehfp, depth, elem, nil)
        from_sched = from_sched + 1
        item = {0, ehfp, '', depth, elem, q_origin(ehfp, nil)}
      end
    elseif not d and not queued_since(hfp, url) and not queued_since('0', url) then
      counter = counter + 1
      local elem = q_compose(counter * shards + shard, ARGV[i + 6], url, q_origin(hfp, url))
      local depth = tonumber(ARGV[i + 5])
      add(hfp, depth, elem, ARGV[i + 4])
      from_done = from_done + 1
      item = {0, hfp, ARGV[i + 4], depth, elem, q_origin(hfp, nil)}
    end
    if item ~= 0 and recrawl > 0 then
      pend_add(m)
    end
  end
  out[#out + 1] = item
end
if from_done + from_sched == 0 then
  return out
end
q_append(order, lists)
for _, hfp in ipairs(horder) do
  local h = hosts[hfp]
  h.name = h.name or redis.call('HGET', pfx .. 'names', hfp)
  if h.name and redis.call('HINCRBY', pfx .. 'hosts', h.name, h.n) == h.n then
    redis.call('HSET', pfx .. 'names', hfp, h.name)
  end
end
for k = 1, #out do
  if out[k] ~= 0 and out[k][3] == '' then
    out[k][3] = hosts[out[k][2]].name or ''
  end
end
redis.call('HINCRBY', meta, 'hostsv', 1)
redis.call('HSET', meta, 'seq', counter)
redis.call('HINCRBY', meta, 'pending', from_done + from_sched)
if from_done > 0 then
  redis.call('HINCRBY', meta, 'done', -from_done)
end
if from_sched > 0 then
  s_store()
end
if pend_n ~= pend_before then
  pend_store()
end
return out
