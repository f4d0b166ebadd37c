-- Moves the shard's revisits due at or before ARGV[5] (Unix seconds), at most ARGV[6] of them and the earliest due
-- first, out of the schedule (sched.lua) into their hosts' queues, fenced like apply.lua: nothing happens unless
-- the shard's owner and token are still ARGV[3] and ARGV[4]. ARGV[7]: the number of shards; ARGV[8]: the recrawl
-- period in seconds (with one, a promoted URL joins the pending set). Each gets a new sequence number at the end of
-- its host queue's list for its depth, as a discovered URL does, its element carrying its prior visit; the host's
-- count, the shard's counters and, when the host had nothing pending, the hosts version move with it. Returns {1,
-- {due time, host fp, host key, depth, element, queue origin}...} or {0} when fenced.
local o = redis.call('HMGET', meta, 'owner', 'token')
if o[1] ~= ARGV[3] or o[2] ~= ARGV[4] then
  return {0}
end
local limit, want = tonumber(ARGV[5]), tonumber(ARGV[6])
local shards, shard = tonumber(ARGV[7]), tonumber(ARGV[2])
local recrawl = tonumber(ARGV[8]) or 0
local counter = tonumber(redis.call('HGET', meta, 'seq')) or 0
if (counter + want + 1) * shards + shard >= 8589934592 then
  return redis.error_reply('FULL shard ' .. ARGV[2] .. ' ran out of queue positions')
end
s_load()
local taken = s_take(limit, want)
if #taken == 0 then
  return {1}
end
if recrawl > 0 then
  pend_load()
end
local out = {1}
local lists, order = {}, {}
local hosts, horder = {}, {}
for _, e in ipairs(taken) do
  local hfp = s_u64(e, 13)
  local depth, at = s_depth(e)
  counter = counter + 1
  local elem = q_varint(counter * shards + shard) .. string.sub(e, at)
  local q = q_key(hfp, depth)
  local l = lists[q]
  if not l then
    l = {hfp = hfp, depth = depth}
    lists[q] = l
    order[#order + 1] = q
  end
  l[#l + 1] = elem
  if not hosts[hfp] then
    hosts[hfp] = 0
    horder[#horder + 1] = hfp
  end
  hosts[hfp] = hosts[hfp] + 1
  if recrawl > 0 then
    pend_add(s_i64(e, 1))
  end
  out[#out + 1] = {s_due(e), hfp, '', depth, elem, q_origin(hfp, nil)}
end
q_append(order, lists)
local names = {}
for _, hfp in ipairs(horder) do
  local name = redis.call('HGET', pfx .. 'names', hfp)
  if name then
    names[hfp] = name
    local n = hosts[hfp]
    if redis.call('HINCRBY', pfx .. 'hosts', name, n) == n then
      redis.call('HINCRBY', meta, 'hostsv', 1)
    end
  end
end
for k = 2, #out do
  out[k][3] = names[out[k][2]] or ''
end
if recrawl > 0 then
  pend_store()
end
s_store()
redis.call('HSET', meta, 'seq', counter)
redis.call('HINCRBY', meta, 'pending', #taken)
return out
