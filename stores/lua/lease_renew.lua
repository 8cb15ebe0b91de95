-- lease.renew {tree, holder, epoch, ttl_ms} (docs/PROTOCOL.md §4.2), one atomic step.
-- KEYS[1] = {prefix}lease:{tree}
-- ARGV[1] = holder, ARGV[2] = epoch (canonical decimal), ARGV[3] = ttl_ms
-- Epochs are compared as canonical decimal strings so that any whole number
-- the caller names compares exactly.
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local rec = redis.call('HMGET', key, 'holder', 'epoch', 'expires_at', 'released')
if not rec[2] then
  return {'lost', false, false}
end
local live = rec[4] ~= '1' and now < tonumber(rec[3])
if live and rec[1] == ARGV[1] and rec[2] == ARGV[2] then
  local expires = string.format('%d', now + tonumber(ARGV[3]))
  redis.call('HSET', key, 'expires_at', expires)
  return {'renewed', expires}
end
if live then
  return {'lost', rec[1], rec[2]}
end
-- An expired or released lease is never renewed, even if nobody took it.
return {'lost', false, false}
