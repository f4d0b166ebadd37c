-- Applies an owner's changes to a shard, fenced: nothing happens unless the shard's owner and fencing token are
-- still this process's. ARGV[3]: process id; ARGV[4]: its token; ARGV[5..7]: the number of finished URLs, updates
-- and records; then three arguments per finished URL (member, host fp, "1" when it counts as a fetched page), two
-- per update (member, encoded entry), two per record (sequence number, line). Finishing twice counts once, and an
-- update of a finished URL does not bring it back. Each record is appended to the shard's stream and, in the same
-- script, read into this process's pending entries. ARGV[8]: the commit's nonce (unique per process run and
-- commit): a call run again after its reply was lost (a client retry) applies nothing twice and returns the first
-- run's reply. Every commit that applies raises the shard's epoch, which every process remembers: a shard whose
-- epoch went back lost commits (a failover to a replica that did not have them). Returns {1, done, pages, epoch,
-- stream ids...} or {0} when fenced.
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
local nf, nu, nr = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local i = 9
local done, pages = 0, 0
for _ = 1, nf do
  local m, hfp = ARGV[i], ARGV[i + 1]
  if redis.call('ZREM', pfx .. 'q:' .. hfp, m) == 1 then
    redis.call('HDEL', pfx .. 'urls', m)
    done = done + 1
    if ARGV[i + 2] == '1' then
      pages = pages + 1
    end
    local name = redis.call('HGET', pfx .. 'names', hfp)
    if name and redis.call('HINCRBY', pfx .. 'hosts', name, -1) <= 0 then
      redis.call('HDEL', pfx .. 'hosts', name)
    end
  end
  i = i + 3
end
for _ = 1, nu do
  if redis.call('HEXISTS', pfx .. 'urls', ARGV[i]) == 1 then
    redis.call('HSET', pfx .. 'urls', ARGV[i], ARGV[i + 1])
  end
  i = i + 2
end
if done > 0 then
  redis.call('HINCRBY', meta, 'done', done)
  redis.call('HINCRBY', meta, 'pending', -done)
  if pages > 0 then
    redis.call('HINCRBY', meta, 'pages', pages)
  end
end
local out = {1, done, pages, redis.call('HINCRBY', meta, 'epoch', 1)}
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
