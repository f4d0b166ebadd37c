-- Whether any process added URLs of a host to the shard (its queue's name was kept when its first URL came).
-- ARGV[3]: the host's fingerprint (unsigned decimal, as key names spell it); ARGV[4]: its host key. Returns 1 or 0.
-- Changes nothing.
if redis.call('HGET', pfx .. 'names', ARGV[3]) == ARGV[4] then
  return 1
end
return 0
