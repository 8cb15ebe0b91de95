-- Every key under the prefix (ARGV[1] is its SCAN pattern), in one round
-- trip: name, DUMP bytes, PEXPIRETIME, type and logical content.
local out = {}
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local t = redis.call('TYPE', k)['ok']
    local v
    if t == 'hash' then v = redis.call('HGETALL', k)
    elseif t == 'string' then v = {redis.call('GET', k)}
    elseif t == 'zset' then v = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
    elseif t == 'set' then v = redis.call('SMEMBERS', k); table.sort(v)
    elseif t == 'list' then v = redis.call('LRANGE', k, 0, -1)
    else v = {} end
    table.insert(out, {k, redis.call('DUMP', k), redis.call('PEXPIRETIME', k), t, v})
  end
until cursor == '0'
return out
