-- rate.read {provider} (docs/PROTOCOL.md §4.4). Read-only.
-- KEYS[1] = {prefix}rate:{provider}:slots, KEYS[2] = {prefix}rate:{provider}:pause
-- ARGV[1] = now (clock_ms)
-- cmp(a, b) comes from decimal.lua, prepended when the script is built.
local in_use = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf')
local paused = redis.call('GET', KEYS[2])
if paused and cmp(paused, ARGV[1]) > 0 then
  return {'rate', in_use, paused}
end
return {'rate', in_use, false}
