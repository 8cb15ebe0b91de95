-- rate.acquire_slot {provider, holder, limit, ttl_ms} (docs/PROTOCOL.md §4.4), one atomic step.
-- KEYS = slots (zset: slot id -> expiry), pause, id counter
-- ARGV = now (the instance clock, clock_ms), limit, ttl_ms. Never server time.
local paused = redis.call('GET', KEYS[2])
if paused and cmp(paused, ARGV[1]) > 0 then return {'paused', paused} end
local live = '(' .. ARGV[1] -- live slots expire after now
if redis.call('ZCOUNT', KEYS[1], live, '+inf') >= tonumber(ARGV[2]) then
  local first = redis.call('ZRANGEBYSCORE', KEYS[1], live, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return {'full', string.format('%d', first[2])}
end
local slot = string.format('%d', redis.call('INCR', KEYS[3])) -- the first write
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], string.format('%d', ARGV[1] + ARGV[3]), slot)
return {'acquired', slot}
