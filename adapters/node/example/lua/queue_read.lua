-- queue.read {child} (docs/PROTOCOL.md §4.3). KEYS[1] = the child's hash
local r = redis.call('HMGET', KEYS[1], 'state', 'claimer', 'attempt', 'depth')
if not r[1] then return {'child'} end
return {'child', r[1], r[2], r[3], r[4]}
