-- A shard's hosts with pending URLs and the pauses recorded for them: {{host key, count, ...}, {host key, until
-- (Unix ms), ...}} (the records queue's key is empty).
return {redis.call('HGETALL', pfx .. 'hosts'), redis.call('HGETALL', pfx .. 'pause')}
