-- rate.acquire_slot {provider, holder, limit, ttl_ms} (docs/PROTOCOL.md §4.4), one atomic step.
-- KEYS[1] = {prefix}rate:{provider}:slots  (zset: member slot id, score expires_at)
-- KEYS[2] = {prefix}rate:{provider}:pause  (string: paused until, ms)
-- KEYS[3] = {prefix}rate:{provider}:seq    (slot and hit id counter)
-- ARGV[1] = now (the instance clock, clock_ms), ARGV[2] = holder,
-- ARGV[3] = limit, ARGV[4] = ttl_ms
-- Everything here is on the instance clock (A10), never on server time.
-- cmp(a, b) comes from decimal.lua, prepended when the script is built.
local paused = redis.call('GET', KEYS[2])
if paused and cmp(paused, ARGV[1]) > 0 then
  return {'paused', paused}
end
local now = tonumber(ARGV[1])
-- Live slots expire after now (score > now).
local live = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[1], '+inf')
if live < tonumber(ARGV[3]) then
  -- INCR is the first write: under maxmemory it is refused before anything
  -- changed (a later, non-growing write would let the rest through).
  local slot = string.format('%d', redis.call('INCR', KEYS[3]))
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
  redis.call('ZADD', KEYS[1], string.format('%d', now + tonumber(ARGV[4])), slot)
  -- ARGV[2] (the holder) is not stored: no reply ever names it.
  return {'acquired', slot}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {'full', string.format('%d', tonumber(first[2]))}
