-- A shard's hosts with pending URLs: {host key, count, ...} (the records queue's key is empty).
return redis.call('HGETALL', pfx .. 'hosts')
