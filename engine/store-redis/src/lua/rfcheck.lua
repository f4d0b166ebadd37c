-- A forced re-fetch's first look at URLs of the shard (refetch.rs). ARGV[3]: the recrawl period in seconds (0:
-- none); ARGV[4]: the number of shards; then two per URL: member, URL fp (8 bytes LE). Returns {the shard's last
-- sequence number, then per URL a state and a due time}: state 0 unknown, 1 pending (in the pending set kept with
-- recrawl), 2 scheduled (due at the due time, Unix seconds), 3 neither: done, or pending in a queue (the caller
-- looks there with rfscan.lua, up to the last sequence number returned here).
local recrawl = tonumber(ARGV[3]) or 0
seen_load(recrawl)
pend_load()
s_load()
local counter = tonumber(redis.call('HGET', meta, 'seq')) or 0
local out = {counter * tonumber(ARGV[4]) + tonumber(ARGV[2])}
for i = 5, #ARGV, 2 do
  local state, due = 3, 0
  if not seen_has(ARGV[i]) then
    state = 0
  elseif pend_n > 0 and pend_has(ARGV[i]) then
    state = 1
  else
    local d = sx_get(ARGV[i + 1])
    if d then
      state, due = 2, d
    end
  end
  out[#out + 1] = state
  out[#out + 1] = due
end
return out
