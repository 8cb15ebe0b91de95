-- rate.hit {provider, limit, window_ms} (docs/PROTOCOL.md §4.4), one atomic step.
-- KEYS = hits (zset: hit id -> clock_ms), pause, id counter
-- ARGV = now (clock_ms), limit, window_ms
-- Counted: hits in (now - window, now]. A hit is pruned only once no window
-- of up to a year could count it.
local paused = redis.call('GET', KEYS[2])
if paused and cmp(paused, ARGV[1]) > 0 then return {'paused', paused} end
local low = '(' .. string.format('%d', ARGV[1] - ARGV[3])
local counted = redis.call('ZCOUNT', KEYS[1], low, ARGV[1])
if counted >= tonumber(ARGV[2]) then
  local first = redis.call('ZRANGEBYSCORE', KEYS[1], low, ARGV[1], 'WITHSCORES', 'LIMIT', 0, 1)
  return {'limited', string.format('%d', first[2] + ARGV[3])}
end
local id = string.format('%d', redis.call('INCR', KEYS[3])) -- the first write
redis.call('ZADD', KEYS[1], ARGV[1], id)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', ARGV[1] - 31536000000))
return {'allowed', string.format('%d', ARGV[2] - counted - 1)}
