-- rate.hit {provider, limit, window_ms} (docs/PROTOCOL.md §4.4), one atomic step.
-- KEYS[1] = {prefix}rate:{provider}:hits   (zset: member hit id, score clock_ms)
-- KEYS[2] = {prefix}rate:{provider}:pause
-- KEYS[3] = {prefix}rate:{provider}:seq
-- ARGV[1] = now (clock_ms), ARGV[2] = limit, ARGV[3] = window_ms,
-- ARGV[4] = retention_ms (the longest window any call may ask for)
-- Counted hits are those in (now - window, now]. Instance clocks may be skewed
-- and windows differ between calls, so a hit is only pruned once it lies
-- outside every possible window (older than now - retention), not as soon as
-- it leaves this call's window.
-- cmp(a, b) comes from decimal.lua, prepended when the script is built.
local paused = redis.call('GET', KEYS[2])
if paused and cmp(paused, ARGV[1]) > 0 then
  return {'paused', paused}
end
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[3])
local limit = tonumber(ARGV[2])
local low = '(' .. string.format('%d', now - window)
local count = redis.call('ZCOUNT', KEYS[1], low, ARGV[1])
if count < limit then
  -- INCR is the first write: under maxmemory it is refused before anything
  -- changed.
  local id = string.format('%d', redis.call('INCR', KEYS[3]))
  redis.call('ZADD', KEYS[1], ARGV[1], id)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf',
    string.format('%d', now - tonumber(ARGV[4])))
  return {'allowed', limit - count - 1}
end
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], low, ARGV[1], 'WITHSCORES',
  'LIMIT', 0, 1)
return {'limited', string.format('%d', tonumber(oldest[2]) + window)}
