-- Adds discovered URLs to a shard: for each, seen-check-and-mark, then (when new) the queue entry, the pending
-- entry, the host count and the counters, all in this one script. Idempotent: run twice, the second run finds every
-- URL seen. ARGV[3]: the number of shards; ARGV[4]: the calling process; ARGV[5]: the recrawl period in seconds (0:
-- none); then five arguments per URL: member, host fp ("0": the records queue), host key, depth, encoded entry.
-- Returns per URL its queue seq (0: already known). With recrawl, a URL still pending is never queued twice.
-- URLs queued by a process other than the shard's owner bump `hostsv`, so the owner reads the shard's hosts again
-- at its next poll (its own adds reach its windows directly).
local shards = tonumber(ARGV[3])
local shard = tonumber(ARGV[2])
local n = (#ARGV - 5) / 5
local recrawl = tonumber(ARGV[5]) or 0
local counter = tonumber(redis.call('HGET', meta, 'seq')) or 0
if (counter + n + 1) * shards + shard >= 8589934592 then
  return redis.error_reply('FULL shard ' .. ARGV[2] .. ' ran out of queue positions')
end
seen_load(recrawl)
local out = {}
local added = 0
for i = 6, #ARGV, 5 do
  local m = ARGV[i]
  if (recrawl == 0 or redis.call('HEXISTS', pfx .. 'urls', m) == 0) and seen_mark(m) then
    counter = counter + 1
    local seq = counter * shards + shard
    local hfp = ARGV[i + 1]
    redis.call('ZADD', pfx .. 'q:' .. hfp, tonumber(ARGV[i + 3]) * 8589934592 + seq, m)
    redis.call('HSET', pfx .. 'urls', m, ARGV[i + 4])
    if redis.call('HINCRBY', pfx .. 'hosts', ARGV[i + 2], 1) == 1 then
      redis.call('HSET', pfx .. 'names', hfp, ARGV[i + 2])
      redis.call('HINCRBY', meta, 'hostsv', 1)
    end
    added = added + 1
    out[#out + 1] = seq
  else
    out[#out + 1] = 0
  end
end
if added > 0 then
  if redis.call('HGET', meta, 'owner') ~= ARGV[4] then
    redis.call('HINCRBY', meta, 'hostsv', 1)
  end
  seen_store()
  redis.call('HSET', meta, 'seq', counter)
  redis.call('HINCRBY', meta, 'known', added)
  redis.call('HINCRBY', meta, 'pending', added)
end
return out
