-- Finding a URL's element in its host queue without the owner's window (a forced re-fetch, refetch.rs): the part
-- of an element that keeps its URL (queue.lua) is read past the element's head, so URLs are matched exactly.

-- A varint at position i: its value and the position after it.
local function f_varint(e, i)
  local v, mul = 0, 1
  while true do
    local b = string.byte(e, i)
    if not b then
      return v, i
    end
    i = i + 1
    if b < 128 then
      return v + b * mul, i
    end
    v = v + (b - 128) * mul
    mul = mul * 128
  end
end

-- What an element keeps of its URL, as a key: 'F' .. the whole URL, or 'P' .. its path (the queue's origin
-- elided). Past the sequence number and the flags come the parent key (8 bytes) or the prior visit (length
-- prefixed), then the extra fields (attempt, retries, the redirect chain's length-prefixed URLs).
local function f_key(e)
  local _, i = f_varint(e, 1)
  local flags = string.byte(e, i) or 0
  i = i + 1
  if flags % 32 >= 16 then
    i = i + 8
  elseif flags % 64 >= 32 then
    local n
    n, i = f_varint(e, i)
    i = i + n
  end
  if flags >= 128 then
    local n
    _, i = f_varint(e, i)
    _, i = f_varint(e, i)
    n, i = f_varint(e, i)
    for _ = 1, n do
      local l
      l, i = f_varint(e, i)
      i = i + l
    end
  end
  if flags % 128 >= 64 then
    return 'F' .. string.sub(e, i)
  end
  return 'P' .. string.sub(e, i)
end

-- The key (see f_key) the element of `url` has in a queue whose origin is `origin` (nil: none), as q_rest builds it.
local function f_url_key(url, origin)
  local o, p = q_origin_of(url)
  if o and o == origin then
    return 'P' .. string.sub(url, p)
  end
  return 'F' .. url
end

-- The queue origin of host fp `hfp` as stored, or nil (never cached: see q_origin).
local function f_origin(hfp)
  return redis.call('HGET', pfx .. 'org', hfp) or nil
end

-- The index of the first element of list q numbered above s (a list is sorted by sequence number).
local function f_after(q, s)
  local lo, hi = 0, redis.call('LLEN', q)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if q_seq(redis.call('LINDEX', q, mid)) <= s then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo
end
