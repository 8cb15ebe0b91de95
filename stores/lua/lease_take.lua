-- lease.take {tree, holder, ttl_ms} (docs/PROTOCOL.md §4.2), one atomic step.
-- KEYS[1] = {prefix}lease:{tree}  (hash: holder, epoch, expires_at, released)
-- ARGV[1] = holder, ARGV[2] = ttl_ms
-- Expiry is judged on server time (TIME), never on the instance clock. The
-- record is never deleted and never given a TTL, so the epoch only grows.
local key = KEYS[1]
local holder, ttl = ARGV[1], tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local rec = redis.call('HMGET', key, 'holder', 'epoch', 'expires_at', 'released')
local epoch = tonumber(rec[2]) or 0
if rec[2] and rec[4] ~= '1' and now < tonumber(rec[3]) then
  -- A live lease, even the caller's own: it may adopt that epoch.
  return {'busy', rec[1], epoch, rec[3]}
end

epoch = epoch + 1
local expires = string.format('%d', now + ttl)
-- HSET is the first write: under maxmemory it is refused (OOM) before
-- anything changed.
redis.call('HSET', key, 'holder', holder, 'epoch', string.format('%d', epoch),
  'expires_at', expires, 'released', '0')
return {'granted', epoch, expires}
