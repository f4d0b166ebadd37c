-- The revisit schedule of a shard (continuous crawling): finished URLs that come due again. An entry is the URL's
-- fingerprint (8 bytes LE), its due time (Unix seconds, 4 bytes LE), its host fp (8 bytes LE), its depth (varint),
-- then the queue element it becomes without its sequence number (see queue.lua: flags with the prior bit, the
-- prior visit, the URL's path or the whole URL).
--
-- Entries live in windows: `sq:<id>` is a list of entries in no particular order, and the window covers the due
-- times from its score in the sorted set `sw` (the earliest due time it holds) up to where the next window starts;
-- `sm` maps it to the latest due time it holds. A window holding more than one due time never holds more than
-- S_WMAX entries: one that grows past it is cut into windows of about half that, at due-time boundaries. A window
-- of one due time may grow (an entry due at another time then starts a window of its own), and is taken from its
-- head without being read. So the earliest due entries are in the first window, and a URL costs its entry in a
-- list rather than a member of a sorted set.
--
-- `sx:<b>` is the index, URL fp (8 bytes) -> due time, in buckets addressed by linear hashing on the fp's low 32
-- bits (layout `sxlv`, `sxsp` in meta; `sched` counts the entries), kept small enough to stay listpacks: a hint,
-- or a second schedule of one URL, finds the URL's entry through its due time.
local S_WMAX = 128
local S_IDX_LOAD = 40
local s_lv, s_sp, s_n, s_wn

local function s_load()
  local st = redis.call('HMGET', meta, 'sxlv', 'sxsp', 'sched', 'swn')
  s_lv = tonumber(st[1]) or 0
  s_sp = tonumber(st[2]) or 0
  s_n = tonumber(st[3]) or 0
  s_wn = tonumber(st[4]) or 0
end

local function s_store()
  redis.call('HSET', meta, 'sxlv', s_lv, 'sxsp', s_sp, 'sched', s_n, 'swn', s_wn)
end

-- The number in 4 bytes LE at i.
local function s_u32(s, i)
  local a, b, c, d = string.byte(s, i, i + 3)
  return a + b * 256 + c * 65536 + d * 16777216
end

local function s_le32(n)
  local t = {}
  for k = 1, 4 do
    local b = n % 256
    t[k] = string.char(b)
    n = (n - b) / 256
  end
  return table.concat(t)
end

-- The unsigned decimal of 8 bytes LE at i (a host fp as key names spell it). Lua numbers are exact to 2^53 only:
-- hi * 2^32 + lo is computed in two parts, with 2^32 = 4294 * 10^6 + 967296.
local function s_u64(s, i)
  local lo, hi = s_u32(s, i), s_u32(s, i + 4)
  local a = hi * 967296 + lo
  local low = a % 1000000
  local up = hi * 4294 + (a - low) / 1000000
  if up == 0 then
    return string.format('%d', low)
  end
  return string.format('%d%06d', up, low)
end

-- The signed decimal of 8 bytes LE at i (a URL fp as set members spell it).
local function s_i64(s, i)
  if string.byte(s, i + 7) < 128 then
    return s_u64(s, i)
  end
  local t, carry = {}, 1
  for k = 0, 7 do
    local v = 255 - string.byte(s, i + k) + carry
    carry = 0
    if v == 256 then
      v, carry = 0, 1
    end
    t[k + 1] = string.char(v)
  end
  return '-' .. s_u64(table.concat(t), 1)
end

local function s_due(e)
  return s_u32(e, 9)
end

-- An entry's depth and where its element starts.
local function s_depth(e)
  local v, mul, i = 0, 1, 21
  while true do
    local b = string.byte(e, i)
    if b < 128 then
      return v + b * mul, i + 1
    end
    v = v + (b - 128) * mul
    mul = mul * 128
    i = i + 1
  end
end

-- The index.
local function sx_bucket(fp)
  local h, n = s_u32(fp, 1), 2 ^ s_lv
  local b = h % n
  if b < s_sp then
    b = h % (2 * n)
  end
  return pfx .. 'sx:' .. string.format('%d', b)
end

-- Splits the bucket at the split pointer (one step of linear hashing).
local function sx_split()
  local n = 2 ^ s_lv
  local src = pfx .. 'sx:' .. string.format('%d', s_sp)
  local dst = pfx .. 'sx:' .. string.format('%d', s_sp + n)
  local all = redis.call('HGETALL', src)
  local fields, moving = {}, {}
  for j = 1, #all, 2 do
    if s_u32(all[j], 1) % (2 * n) ~= s_sp then
      fields[#fields + 1] = all[j]
      moving[#moving + 1] = all[j]
      moving[#moving + 1] = all[j + 1]
    end
  end
  if #fields > 0 then
    redis.call('HDEL', src, unpack(fields))
    redis.call('HSET', dst, unpack(moving))
  end
  s_sp = s_sp + 1
  if s_sp >= n then
    s_lv = s_lv + 1
    s_sp = 0
  end
end

-- The due time of a scheduled URL, or nil.
local function sx_get(fp)
  return tonumber(redis.call('HGET', sx_bucket(fp), fp))
end

-- Sets a URL's due time; true when it was not scheduled.
local function sx_set(fp, due)
  if redis.call('HSET', sx_bucket(fp), fp, due) == 0 then
    return false
  end
  s_n = s_n + 1
  if s_n > S_IDX_LOAD * (2 ^ s_lv + s_sp) then
    sx_split()
  end
  return true
end

local function sx_del(fp)
  if redis.call('HDEL', sx_bucket(fp), fp) == 1 then
    s_n = s_n - 1
  end
end

-- The windows.
local function w_key(id)
  return pfx .. 'sq:' .. id
end

-- The window that holds due time d (the last one starting at or before it) and its start; nil when none does.
local function w_at(d)
  local r = redis.call('ZREVRANGEBYSCORE', pfx .. 'sw', d, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if r[1] then
    return r[1], tonumber(r[2])
  end
  return nil, nil
end

local function w_first()
  local r = redis.call('ZRANGE', pfx .. 'sw', 0, 0, 'WITHSCORES')
  if r[1] then
    return r[1], tonumber(r[2])
  end
  return nil, nil
end

local function w_last_due(id)
  return tonumber(redis.call('HGET', pfx .. 'sm', id))
end

local function w_set(id, lo, hi)
  redis.call('ZADD', pfx .. 'sw', lo, id)
  redis.call('HSET', pfx .. 'sm', id, hi)
end

local function w_new(lo, hi)
  s_wn = s_wn + 1
  local id = string.format('%d', s_wn)
  w_set(id, lo, hi)
  return id
end

local function w_drop(id)
  redis.call('DEL', w_key(id))
  redis.call('ZREM', pfx .. 'sw', id)
  redis.call('HDEL', pfx .. 'sm', id)
end

local function s_push(key, list, from, to)
  for j = from, to, 1000 do
    redis.call('RPUSH', key, unpack(list, j, math.min(j + 999, to)))
  end
end

-- Entries sorted by due time, then by their place in the list; and their due times.
local function s_sorted(all)
  local idx, dues = {}, {}
  for i = 1, #all do
    idx[i] = i
    dues[i] = s_due(all[i])
  end
  table.sort(idx, function(a, b)
    if dues[a] ~= dues[b] then
      return dues[a] < dues[b]
    end
    return a < b
  end)
  local es, ds = {}, {}
  for i = 1, #idx do
    es[i] = all[idx[i]]
    ds[i] = dues[idx[i]]
  end
  return es, ds
end

-- Writes window `id` again from its entries sorted (`es`, due times `ds`), cut at due-time boundaries into windows
-- of about half S_WMAX (a run of one due time stays whole); the first keeps the id.
local function w_cut(id, es, ds)
  local n = #es
  local t = math.ceil(n / math.max(2, math.floor(n / (S_WMAX / 2))))
  redis.call('DEL', w_key(id))
  local i, wid = 1, id
  while i <= n do
    local j = i + t - 1
    if j >= n then
      j = n
    else
      local k = j
      while k >= i and ds[k] == ds[k + 1] do
        k = k - 1
      end
      if k >= i then
        j = k
      else
        while j < n and ds[j] == ds[j + 1] do
          j = j + 1
        end
      end
    end
    if i == 1 then
      w_set(id, ds[1], ds[j])
    else
      wid = w_new(ds[i], ds[j])
    end
    s_push(w_key(wid), es, i, j)
    i = j + 1
  end
end

-- Puts entry e, due at d, in its window.
local function s_insert(e, d)
  local id, lo = w_at(d)
  if not id then
    id, lo = w_first()
    if not id then
      redis.call('RPUSH', w_key(w_new(d, d)), e)
      return
    end
  end
  local key = w_key(id)
  local hi = w_last_due(id)
  if lo == hi and d ~= lo and redis.call('LLEN', key) >= S_WMAX then
    -- a full window of one due time is never read whole: the entry starts a window of its own
    redis.call('RPUSH', w_key(w_new(d, d)), e)
    return
  end
  if d < lo or d > hi then
    lo, hi = math.min(lo, d), math.max(hi, d)
    w_set(id, lo, hi)
  end
  if redis.call('RPUSH', key, e) > S_WMAX and lo < hi then
    w_cut(id, s_sorted(redis.call('LRANGE', key, 0, -1)))
  end
end

-- The entry of URL fp due at d, its window and the window's start; nil when it is not there.
local function s_find(fp, d)
  local id, lo = w_at(d)
  if not id then
    return nil
  end
  local key, i = w_key(id), 0
  while true do
    local r = redis.call('LRANGE', key, i, i + 127)
    for j = 1, #r do
      if string.sub(r[j], 1, 8) == fp then
        return r[j], id, lo
      end
    end
    if #r < 128 then
      return nil
    end
    i = i + #r
  end
end

-- Takes the entry of URL fp due at d out of its window (the index is the caller's); returns it, or nil.
local function s_remove(fp, d)
  local e, id, lo = s_find(fp, d)
  if not e then
    return nil
  end
  local key = w_key(id)
  redis.call('LREM', key, 1, e)
  local hi = w_last_due(id)
  if redis.call('EXISTS', key) == 0 then
    w_drop(id)
  elseif lo < hi and (d == lo or d == hi) then
    local _, ds = s_sorted(redis.call('LRANGE', key, 0, -1))
    w_set(id, ds[1], ds[#ds])
  end
  return e
end

-- Schedules entry e of URL fp at due time d, in place of the URL's entry if it had one; true when it had none.
local function s_put(fp, d, e)
  local old = sx_get(fp)
  if old then
    s_remove(fp, old)
  end
  s_insert(e, d)
  return sx_set(fp, d)
end

-- Takes up to `want` entries due at or before `limit` out of the schedule, the earliest due first (entries due at
-- the same time in the order they were scheduled).
local function s_take(limit, want)
  local out = {}
  while #out < want do
    local id, lo = w_first()
    if not id or lo > limit then
      break
    end
    local key = w_key(id)
    if lo == w_last_due(id) then
      local r = redis.call('LRANGE', key, 0, want - #out - 1)
      for j = 1, #r do
        out[#out + 1] = r[j]
      end
      redis.call('LTRIM', key, #r, -1)
      if redis.call('EXISTS', key) == 0 then
        w_drop(id)
      end
    else
      local es, ds = s_sorted(redis.call('LRANGE', key, 0, -1))
      local k = 0
      while k < #es and ds[k + 1] <= limit and #out < want do
        k = k + 1
        out[#out + 1] = es[k]
      end
      if k == #es then
        w_drop(id)
      else
        redis.call('DEL', key)
        s_push(key, es, k + 1, #es)
        w_set(id, ds[k + 1], ds[#es])
      end
    end
  end
  for _, e in ipairs(out) do
    sx_del(string.sub(e, 1, 8))
  end
  return out
end

-- Counts the entries due at or before `limit`, the earliest first, up to `cap`; with `pairs`, also their due
-- times as {due, count, ...} in order.
local function s_count(limit, cap, pairs)
  local count, out, from = 0, {}, 0
  local function one(d, n)
    count = count + n
    if pairs then
      if out[#out - 1] == d then
        out[#out] = out[#out] + n
      else
        out[#out + 1] = d
        out[#out + 1] = n
      end
    end
  end
  while count < cap do
    local ws = redis.call('ZRANGEBYSCORE', pfx .. 'sw', '-inf', limit, 'WITHSCORES', 'LIMIT', from, 64)
    for j = 1, #ws, 2 do
      if count >= cap then
        break
      end
      local id, lo = ws[j], tonumber(ws[j + 1])
      local hi = w_last_due(id)
      local key = w_key(id)
      if lo == hi then
        one(lo, math.min(redis.call('LLEN', key), cap - count))
      elseif hi <= limit and not pairs then
        one(lo, math.min(redis.call('LLEN', key), cap - count))
      else
        local _, ds = s_sorted(redis.call('LRANGE', key, 0, -1))
        for k = 1, #ds do
          if ds[k] > limit or count >= cap then
            break
          end
          one(ds[k], 1)
        end
      end
    end
    if #ws < 128 then
      break
    end
    from = from + 64
  end
  return count, out
end
