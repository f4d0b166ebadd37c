-- Host queues and the parent table of a shard. A host queue is one list per depth, `q:<host fp>:<depth>`, its
-- elements (crawl_core::frontier::codec::QueueElement) appended in discovery order, so each list is sorted by
-- sequence number; `qd:<host fp>` is a sorted set of the depths whose list is not empty. `org` maps a host fp to
-- its queue's origin (`scheme://authority`, from its first URL): an element of a URL with that origin keeps only
-- the path. `par` maps a parent key (8 bytes) to `<pending children> <parent URL>`: each parent URL is stored once,
-- and its row goes when its last pending child is finished.
local Q_FLAG_PARENT, Q_FLAG_FULL = 16, 64

local function q_key(hfp, depth)
  return pfx .. 'q:' .. hfp .. ':' .. depth
end

local function q_varint(n)
  local t = {}
  while n >= 128 do
    local low = n % 128
    t[#t + 1] = string.char(low + 128)
    n = (n - low) / 128
  end
  t[#t + 1] = string.char(n)
  return table.concat(t)
end

-- An element's sequence number and the position of its flags byte.
local function q_seq(e)
  local v, mul, i = 0, 1, 1
  while true do
    local b = string.byte(e, i)
    if not b then
      return -1, i
    end
    if b < 128 then
      return v + b * mul, i + 1
    end
    v = v + (b - 128) * mul
    mul = mul * 128
    i = i + 1
  end
end

-- The parent key (8 bytes) of an element, or nil. `h` is where the flags byte is.
local function q_parent_at(e, h)
  local flags = string.byte(e, h) or 0
  if flags % 32 >= Q_FLAG_PARENT then
    return string.sub(e, h + 1, h + 8)
  end
  return nil
end

-- The origin of a URL and where its path starts, or nil.
local function q_origin_of(url)
  local s = string.find(url, '://', 1, true)
  if not s then
    return nil
  end
  local p = string.find(url, '/', s + 3, true)
  if not p then
    return nil
  end
  return string.sub(url, 1, p - 1), p
end

-- An element without its sequence number: the head the caller encoded (flags, parent key or prior visit, extra
-- fields), the URL's path when its origin is the queue's, else (full-URL flag set) the whole URL.
local function q_rest(head, url, origin)
  local o, p = q_origin_of(url)
  if o and o == origin then
    return head .. string.sub(url, p)
  end
  return string.char(string.byte(head, 1) + Q_FLAG_FULL) .. string.sub(head, 2) .. url
end

-- An element: sequence number, then the rest (see q_rest).
local function q_compose(seq, head, url, origin)
  return q_varint(seq) .. q_rest(head, url, origin)
end

-- Appends elements to host queues: `order` lists the queue keys in first-use order, `lists[q]` the elements of
-- queue `q` with its `hfp` and `depth`; a queue that was empty gets its depth marked in `qd:`.
local function q_append(order, lists)
  for _, q in ipairs(order) do
    local l = lists[q]
    local len = 0
    for j = 1, #l, 1000 do
      len = redis.call('RPUSH', q, unpack(l, j, math.min(j + 999, #l)))
    end
    if len == #l then
      redis.call('ZADD', pfx .. 'qd:' .. l.hfp, l.depth, l.depth)
    end
  end
end

-- The origin of a host's queue (cached per script run); `url` sets it when the queue has none yet.
local q_origins = {}
local function q_origin(hfp, url)
  local o = q_origins[hfp]
  if o == nil then
    o = redis.call('HGET', pfx .. 'org', hfp)
    if not o and url then
      o = q_origin_of(url)
      if o then
        redis.call('HSET', pfx .. 'org', hfp, o)
      end
    end
    o = o or ''
    q_origins[hfp] = o
  end
  return o
end

-- Finds elements of list `q` by sequence number near its head: `want` maps seq → anything; the scan stops at the
-- first element past `max` (the list is sorted by seq), so it reads only what comes before the last one asked.
-- Returns seq → {index, element}.
local function q_find(q, want, max)
  local found, i = {}, 0
  while true do
    local r = redis.call('LRANGE', q, i, i + 127)
    for j = 1, #r do
      local s = q_seq(r[j])
      if s > max then
        return found
      end
      if want[s] ~= nil then
        found[s] = {i + j - 1, r[j]}
      end
    end
    if #r < 128 then
      return found
    end
    i = i + #r
  end
end

-- Adds `n` pending children (n < 0: removes them) to parent rows: `changes` maps parent key → {n, url}.
local function par_apply(changes)
  local par = pfx .. 'par'
  for key, c in pairs(changes) do
    if c[1] ~= 0 then
      local cur = redis.call('HGET', par, key)
      local count, url = 0, c[2]
      if cur then
        local sp = string.find(cur, ' ', 1, true)
        count = tonumber(string.sub(cur, 1, sp - 1))
        url = string.sub(cur, sp + 1)
      end
      count = count + c[1]
      if count > 0 then
        redis.call('HSET', par, key, count .. ' ' .. (url or ''))
      elseif cur then
        redis.call('HDEL', par, key)
      end
    end
  end
end
