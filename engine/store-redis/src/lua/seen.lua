-- The seen-URL set of a shard: URL fingerprints (decimal i64 members, stored as 8-byte integers in integer sets)
-- in buckets addressed by linear hashing. h = the integer value of the member's last 9 decimal digits; with level
-- lv and split pointer sp the bucket is h mod 2^lv, or h mod 2^(lv+1) when that is below sp. When the shard holds
-- more than BUCKET_LOAD members per bucket, the bucket at sp is split: its members with h mod 2^(lv+1) ~= sp move to
-- bucket sp + 2^lv (one bucket's worth of work), and sp advances.
--
-- With recrawl (a period R in seconds), the set has generations: generation g holds what was first seen while
-- floor(Redis time / R) was g. A member counts as seen in the current and the previous generation; when the
-- generation moves on, the one before the previous is deleted. So a URL is taken as new again between R and 2R
-- after it was last queued. Generation 0 (no recrawl) keeps its buckets at `s:<b>`, generation g at `s<g>:<b>`.
local BUCKET_LOAD = 192
local seen_lv, seen_sp, seen_n, seen_gen, seen_plv, seen_psp, seen_pgen

local function seen_key_of(gen, b)
  if gen == 0 then
    return pfx .. 's:' .. string.format('%d', b)
  end
  return pfx .. 's' .. string.format('%d', gen) .. ':' .. string.format('%d', b)
end

-- Deletes every bucket of one generation.
local function seen_drop(gen, lv, sp)
  local n = 2 ^ lv + sp
  for b = 0, n - 1, 256 do
    local keys = {}
    for i = b, math.min(b + 255, n - 1) do
      keys[#keys + 1] = seen_key_of(gen, i)
    end
    redis.call('UNLINK', unpack(keys))
  end
end

-- Loads the layout; `recrawl` is the period in seconds (0: none). A new period starts a new generation.
local function seen_load(recrawl)
  local st = redis.call('HMGET', meta, 'lv', 'sp', 'seen', 'gen', 'plv', 'psp', 'pgen')
  seen_lv = tonumber(st[1]) or 0
  seen_sp = tonumber(st[2]) or 0
  seen_n = tonumber(st[3]) or 0
  seen_gen = tonumber(st[4]) or 0
  seen_plv = tonumber(st[5])
  seen_psp = tonumber(st[6])
  seen_pgen = tonumber(st[7])
  if (recrawl or 0) <= 0 then
    return
  end
  local now = math.floor(tonumber(redis.call('TIME')[1]) / recrawl)
  if now <= seen_gen then
    return
  end
  if seen_pgen then
    seen_drop(seen_pgen, seen_plv, seen_psp)
  end
  if now == seen_gen + 1 and seen_n > 0 then
    seen_pgen, seen_plv, seen_psp = seen_gen, seen_lv, seen_sp
  else
    seen_drop(seen_gen, seen_lv, seen_sp)
    seen_pgen, seen_plv, seen_psp = nil, nil, nil
  end
  seen_gen, seen_lv, seen_sp, seen_n = now, 0, 0, 0
  redis.call('HDEL', meta, 'pgen', 'plv', 'psp')
  if seen_pgen then
    redis.call('HSET', meta, 'pgen', seen_pgen, 'plv', seen_plv, 'psp', seen_psp)
  end
  redis.call('HSET', meta, 'gen', seen_gen, 'lv', 0, 'sp', 0, 'seen', 0)
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
  return seen_key_of(seen_gen, b)
end

local function bucket_of(h, lv, sp)
  local n = 2 ^ lv
  local b = h % n
  if b < sp then
    b = h % (2 * n)
  end
  return b
end

local function seen_bucket(h)
  return bucket_of(h, seen_lv, seen_sp)
end

-- Whether the previous generation (recrawl) holds a member.
local function seen_before(m)
  if not seen_pgen then
    return false
  end
  local b = bucket_of(seen_h(m), seen_plv, seen_psp)
  return redis.call('SISMEMBER', seen_key_of(seen_pgen, b), m) == 1
end

-- Moves the members of bucket `src` whose h mod 2n is not `sp` to bucket `dst` (one step of linear hashing).
local function split_bucket(src, dst, n, sp)
  local moving = {}
  for _, m in ipairs(redis.call('SMEMBERS', src)) do
    if seen_h(m) % (2 * n) ~= sp then
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
end

local function seen_split()
  local n = 2 ^ seen_lv
  split_bucket(seen_key(seen_sp), seen_key(seen_sp + n), n, seen_sp)
  seen_sp = seen_sp + 1
  if seen_sp >= n then
    seen_lv = seen_lv + 1
    seen_sp = 0
  end
end

-- Marks a member seen; false when it was seen already.
local function seen_mark(m)
  if seen_before(m) then
    return false
  end
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
  return redis.call('SISMEMBER', seen_key(seen_bucket(seen_h(m))), m) == 1 or seen_before(m)
end

-- With recrawl, the members still pending, in buckets of the same kind (`pn:<b>`, layout `pnlv`, `pnsp`, `pnn` in
-- meta), so that a URL found again while it still waits is not queued twice. Finishing a URL removes its member;
-- the buckets only ever split.
local pend_lv, pend_sp, pend_n

local function pend_load()
  local st = redis.call('HMGET', meta, 'pnlv', 'pnsp', 'pnn')
  pend_lv = tonumber(st[1]) or 0
  pend_sp = tonumber(st[2]) or 0
  pend_n = tonumber(st[3]) or 0
end

local function pend_store()
  redis.call('HSET', meta, 'pnlv', pend_lv, 'pnsp', pend_sp, 'pnn', pend_n)
end

local function pend_key(m)
  return pfx .. 'pn:' .. string.format('%d', bucket_of(seen_h(m), pend_lv, pend_sp))
end

local function pend_has(m)
  return redis.call('SISMEMBER', pend_key(m), m) == 1
end

local function pend_add(m)
  if redis.call('SADD', pend_key(m), m) == 0 then
    return
  end
  pend_n = pend_n + 1
  if pend_n > BUCKET_LOAD * (2 ^ pend_lv + pend_sp) then
    local n = 2 ^ pend_lv
    split_bucket(pfx .. 'pn:' .. string.format('%d', pend_sp), pfx .. 'pn:' .. string.format('%d', pend_sp + n), n, pend_sp)
    pend_sp = pend_sp + 1
    if pend_sp >= n then
      pend_lv = pend_lv + 1
      pend_sp = 0
    end
  end
end

local function pend_del(m)
  if redis.call('SREM', pend_key(m), m) == 1 then
    pend_n = pend_n - 1
  end
end
