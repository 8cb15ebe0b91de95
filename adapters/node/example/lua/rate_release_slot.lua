-- rate.release_slot {provider, slot} (docs/PROTOCOL.md §4.4), one atomic step.
-- KEYS[1] = slots; ARGV = now (clock_ms), slot
local expires = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not expires then return {'unknown'} end
redis.call('ZREM', KEYS[1], ARGV[2])
if tonumber(expires) > tonumber(ARGV[1]) then return {'released'} end
return {'unknown'} -- it had expired: no longer held
