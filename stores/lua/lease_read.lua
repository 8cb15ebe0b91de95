-- lease.read {tree} (docs/PROTOCOL.md §4.2): the record and whether it is live on server
-- time. Read-only.
-- KEYS[1] = {prefix}lease:{tree}
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local rec = redis.call('HMGET', key, 'holder', 'epoch', 'expires_at', 'released')
if not rec[2] then
  return {'lease'}
end
local live = 0
if rec[4] ~= '1' and now < tonumber(rec[3]) then
  live = 1
end
return {'lease', rec[1], rec[2], rec[3], live}
