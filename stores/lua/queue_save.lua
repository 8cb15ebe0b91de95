-- queue.save {child, depth, payload} (docs/PROTOCOL.md §4.3), one atomic step.
-- KEYS[1] = {prefix}q:child:{child}  (hash)
-- KEYS[2] = {prefix}q:index          (zset of not-done children, all score 0)
-- KEYS[3] = {prefix}q:seq            (save-order counter)
-- ARGV[1] = child, ARGV[2] = depth (canonical decimal),
-- ARGV[3] = payload, ARGV[4] = depth rank (19 digits, i64::MAX - depth)
--
-- The index member is "<depth rank>:<saved_at>:<seq>:<child>" with fixed-width
-- numbers and every score 0, so Redis's lexicographic order of equal scores
-- is exactly the claim order: deepest first, then saved_at, then seq. The
-- depth rank is computed by the client in 64-bit integers because Lua numbers
-- are doubles and would merge very large depths.
local key = KEYS[1]
local state = redis.call('HGET', key, 'state')
if state then
  -- Never re-queue a known child, whatever its state.
  return {'exists', state}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- INCR is the first write: under maxmemory it is refused before anything
-- changed.
local seq = redis.call('INCR', KEYS[3])
local member = ARGV[4] .. ':' .. string.format('%016d', now) .. ':'
  .. string.format('%016d', seq) .. ':' .. ARGV[1]
redis.call('HSET', key, 'state', 'queued', 'depth', ARGV[2], 'payload', ARGV[3],
  'attempt', '0', 'saved_at', string.format('%d', now),
  'seq', string.format('%d', seq), 'member', member)
redis.call('ZADD', KEYS[2], 0, member)
return {'saved'}
