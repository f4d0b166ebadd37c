-- A shard's counters and the number of its records not acknowledged yet:
-- {known, pending, done, pages, unacknowledged}.
local c = redis.call('HMGET', meta, 'known', 'pending', 'done', 'pages')
local p = redis.call('XPENDING', pfx .. 'rec', 'g')
return {tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0, tonumber(c[4]) or 0, p[1]}
