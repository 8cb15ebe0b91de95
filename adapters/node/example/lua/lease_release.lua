-- lease.release {tree, holder, epoch} (docs/PROTOCOL.md §4.2), one atomic step.
-- KEYS[1] = the tree's lease hash; ARGV = holder, epoch (canonical decimal)
-- The record stays (marked released), so the next take counts on from its epoch.
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'released')
if r[2] and r[1] == ARGV[1] and r[2] == ARGV[2] and r[3] ~= '1' then
  redis.call('HSET', KEYS[1], 'released', '1')
  return {'released'}
end
return {'not_held'}
