-- lease.release {tree, holder, epoch} (docs/PROTOCOL.md §4.2), one atomic step.
-- KEYS[1] = {prefix}lease:{tree}
-- ARGV[1] = holder, ARGV[2] = epoch (canonical decimal)
-- Releasing keeps the record (holder, epoch, expires_at) and only marks it
-- released, so the next take counts on from the same epoch. A matching
-- release of an already expired lease is still `released`.
local key = KEYS[1]
local rec = redis.call('HMGET', key, 'holder', 'epoch', 'released')
if rec[2] and rec[1] == ARGV[1] and rec[2] == ARGV[2] and rec[3] ~= '1' then
  redis.call('HSET', key, 'released', '1')
  return {'released'}
end
return {'not_held'}
