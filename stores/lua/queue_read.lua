-- queue.read {child} (docs/PROTOCOL.md §4.3). Read-only.
-- KEYS[1] = {prefix}q:child:{child}
local rec = redis.call('HMGET', KEYS[1], 'state', 'claimer', 'attempt', 'depth')
if not rec[1] then
  return {'child'}
end
return {'child', rec[1], rec[2], rec[3], rec[4]}
