-- The shard's operator rules (operator.rs), when they changed. ARGV[3]: the `opv` the caller has read them at (-1:
-- none). Returns {opv, 0} while that is still the shard's, else {opv, 1, host, rule, ...}.
local v = tonumber(redis.call('HGET', meta, 'opv')) or 0
if v == tonumber(ARGV[3]) then
  return {v, 0}
end
local out = {v, 1}
for _, x in ipairs(redis.call('HGETALL', pfx .. 'ops')) do
  out[#out + 1] = x
end
return out
