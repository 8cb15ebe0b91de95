-- rate.read {provider} (docs/PROTOCOL.md §4.4). KEYS = slots, pause; ARGV[1] = now (clock_ms)
local in_use = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf')
local paused = redis.call('GET', KEYS[2])
if paused and cmp(paused, ARGV[1]) > 0 then return {'rate', in_use, paused} end
return {'rate', in_use, false}
