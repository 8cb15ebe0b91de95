-- queue.complete {child, instance, attempt} (docs/PROTOCOL.md §4.3), one atomic step.
-- KEYS[1] = {prefix}q:child:{child}, KEYS[2] = {prefix}q:index
-- ARGV[1] = instance, ARGV[2] = attempt (canonical decimal)
-- Only the child's current, unexpired claim (on server time) completes it.
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local rec = redis.call('HMGET', key, 'state', 'claimer', 'attempt',
  'claim_expires_at', 'member')
if not rec[1] then
  return {'not_claimer', false, false}
end
if rec[1] == 'claimed' and rec[2] == ARGV[1] and rec[3] == ARGV[2]
    and now < tonumber(rec[4]) then
  -- HSET first so that a full server refuses before anything changed.
  redis.call('HSET', key, 'state', 'done')
  redis.call('ZREM', KEYS[2], rec[5])
  return {'completed'}
end
-- rec[2] is false when the child was never claimed.
return {'not_claimer', rec[2], rec[3]}
