-- rate.pause {provider, until_ms} (docs/PROTOCOL.md §4.4), one atomic step.
-- KEYS[1] = pause (text, no TTL); ARGV[1] = until_ms (canonical decimal)
-- A pause only lengthens: the answer is the pause recorded afterwards.
local current = redis.call('GET', KEYS[1])
if current and cmp(current, ARGV[1]) >= 0 then return {'paused', current} end
redis.call('SET', KEYS[1], ARGV[1])
return {'paused', ARGV[1]}
