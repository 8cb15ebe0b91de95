-- lease.take {tree, holder, ttl_ms} (docs/PROTOCOL.md §4.2), one atomic step.
-- KEYS[1] = the tree's lease hash (holder, epoch, expires_at, released)
-- ARGV = holder, ttl_ms
-- The record is never deleted and has no TTL, so the epoch only grows.
local now = server_now()
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
if r[2] and r[4] ~= '1' and now < tonumber(r[3]) then
  return {'busy', r[1], r[2], r[3]} -- a live lease, even the caller's own
end
local epoch = string.format('%d', (tonumber(r[2]) or 0) + 1)
local expires = string.format('%d', now + ARGV[2])
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'epoch', epoch, 'expires_at', expires, 'released', '0')
return {'granted', epoch, expires}
