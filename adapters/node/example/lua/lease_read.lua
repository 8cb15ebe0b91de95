-- lease.read {tree} (docs/PROTOCOL.md §4.2): the record, live or not on server time.
-- KEYS[1] = the tree's lease hash
local r = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'expires_at', 'released')
if not r[2] then return {'lease'} end
local live = r[4] ~= '1' and server_now() < tonumber(r[3])
return {'lease', r[1], r[2], r[3], live and 1 or 0}
