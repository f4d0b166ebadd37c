-- A shard's hosts with pending URLs and the pauses recorded for them: {{host key, count, ...}, {host key, until
-- (Unix ms), ...}} (the records queue's key is empty); with ARGV[3] = '1' (a shard just gained) also its robots.txt
-- rules {authority, value, ...}.
local r = {redis.call('HGETALL', pfx .. 'hosts'), redis.call('HGETALL', pfx .. 'pause')}
if ARGV[3] == '1' then
  r[3] = redis.call('HGETALL', pfx .. 'robots')
end
return r
