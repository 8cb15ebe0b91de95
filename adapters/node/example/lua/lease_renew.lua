-- lease.renew {tree, holder, epoch, ttl_ms} (docs/PROTOCOL.md §4.2), one atomic step.
-- KEYS[1] = the tree's lease hash; ARGV = holder, epoch (canonical decimal), ttl_ms
-- Epochs are compared as text, so any whole number the caller names compares exactly.
local now = server_now()
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
local live = r[2] and r[4] ~= '1' and now < tonumber(r[3])
if not live then return {'lost', false, false} end -- never renewed once expired or released
if r[1] ~= ARGV[1] or r[2] ~= ARGV[2] then return {'lost', r[1], r[2]} end
local expires = string.format('%d', now + ARGV[3])
redis.call('HSET', KEYS[1], 'expires_at', expires)
return {'renewed', expires}
