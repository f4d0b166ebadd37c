-- The seen-URL set of a shard: URL fingerprints (decimal i64 members, stored as 8-byte integers in integer sets)
-- in buckets addressed by linear hashing. h = the integer value of the member's last 9 decimal digits; with level
-- lv and split pointer sp the bucket is h mod 2^lv, or h mod 2^(lv+1) when that is below sp. When the shard holds
-- more than BUCKET_LOAD members per bucket, the bucket at sp is split: its members with h mod 2^(lv+1) ~= sp move to
-- bucket sp + 2^lv (one bucket's worth of work), and sp advances.
local BUCKET_LOAD = 192
local seen_lv, seen_sp, seen_n

local function seen_load()
  local st = redis.call('HMGET', meta, 'lv', 'sp', 'seen')
  seen_lv = tonumber(st[1]) or 0
  seen_sp = tonumber(st[2]) or 0
  seen_n = tonumber(st[3]) or 0
end

local function seen_store()
  redis.call('HSET', meta, 'lv', seen_lv, 'sp', seen_sp, 'seen', seen_n)
end

local function seen_h(m)
  if string.byte(m, 1) == 45 then
    m = string.sub(m, 2)
  end
  return tonumber(string.sub(m, -9))
end

local function seen_key(b)
  return pfx .. 's:' .. string.format('%d', b)
end

local function seen_bucket(h)
  local n = 2 ^ seen_lv
  local b = h % n
  if b < seen_sp then
    b = h % (2 * n)
  end
  return b
end

local function seen_split()
  local n = 2 ^ seen_lv
  local src = seen_key(seen_sp)
  local dst = seen_key(seen_sp + n)
  local moving = {}
  for _, m in ipairs(redis.call('SMEMBERS', src)) do
    if seen_h(m) % (2 * n) ~= seen_sp then
      moving[#moving + 1] = m
    end
  end
  for i = 1, #moving, 500 do
    local chunk = {}
    for j = i, math.min(i + 499, #moving) do
      chunk[#chunk + 1] = moving[j]
    end
    redis.call('SREM', src, unpack(chunk))
    redis.call('SADD', dst, unpack(chunk))
  end
  seen_sp = seen_sp + 1
  if seen_sp >= n then
    seen_lv = seen_lv + 1
    seen_sp = 0
  end
end

-- Marks a member seen; false when it was seen already.
local function seen_mark(m)
  if redis.call('SADD', seen_key(seen_bucket(seen_h(m))), m) == 0 then
    return false
  end
  seen_n = seen_n + 1
  if seen_n > BUCKET_LOAD * (2 ^ seen_lv + seen_sp) then
    seen_split()
  end
  return true
end

local function seen_has(m)
  return redis.call('SISMEMBER', seen_key(seen_bucket(seen_h(m))), m) == 1
end
