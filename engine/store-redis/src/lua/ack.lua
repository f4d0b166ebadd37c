-- Acknowledges and deletes records a process wrote to its JSONL. KEYS[1]: the stream; ARGV: stream ids.
local n = redis.call('XACK', KEYS[1], 'g', unpack(ARGV))
redis.call('XDEL', KEYS[1], unpack(ARGV))
return n
