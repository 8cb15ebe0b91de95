-- queue.complete {child, instance, attempt} (docs/PROTOCOL.md §4.3), one atomic step.
-- KEYS = the child's hash, the index; ARGV = instance, attempt (canonical decimal)
-- Only the child's current claim, unexpired on server time, completes it.
local r = redis.call('HMGET', KEYS[1], 'state', 'claimer', 'attempt', 'claim_expires_at', 'member')
if not r[1] then return {'not_claimer', false, false} end
if r[1] == 'claimed' and r[2] == ARGV[1] and r[3] == ARGV[2] and server_now() < tonumber(r[4]) then
  redis.call('HSET', KEYS[1], 'state', 'done')
  redis.call('ZREM', KEYS[2], r[5])
  return {'completed'}
end
return {'not_claimer', r[2], r[3]} -- claimer is false (null) before the first claim
