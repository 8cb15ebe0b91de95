-- rate.release_slot {provider, slot} (docs/PROTOCOL.md §4.4), one atomic step.
-- KEYS[1] = {prefix}rate:{provider}:slots
-- ARGV[1] = now (clock_ms), ARGV[2] = slot
-- An expired slot is removed too, but answers `unknown`: it was no longer held.
local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not score then
  return {'unknown'}
end
redis.call('ZREM', KEYS[1], ARGV[2])
if tonumber(score) > tonumber(ARGV[1]) then
  return {'released'}
end
return {'unknown'}
