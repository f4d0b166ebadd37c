-- Whether a member was ever added to the shard. ARGV[3]: the member.
seen_load()
if seen_has(ARGV[3]) then
  return 1
end
return 0
