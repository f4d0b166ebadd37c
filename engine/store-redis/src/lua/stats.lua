-- A shard's counters, the number of its records not acknowledged yet, and its hosts version (raised whenever a
-- host gets its first pending URL) and its epoch (raised by every commit): {known, pending, done, pages,
-- unacknowledged, hosts version, epoch, scheduled}.
local c = redis.call('HMGET', meta, 'known', 'pending', 'done', 'pages', 'hostsv', 'epoch', 'sched')
local p = redis.call('XPENDING', pfx .. 'rec', 'g')
return {tonumber(c[1]) or 0, tonumber(c[2]) or 0, tonumber(c[3]) or 0, tonumber(c[4]) or 0, p[1], tonumber(c[5]) or 0, tonumber(c[6]) or 0, tonumber(c[7]) or 0}
