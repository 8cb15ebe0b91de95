-- Every key under the prefix (ARGV[1] is its SCAN pattern), in one round
-- trip: the whole database's size, then for each key its name, DUMP bytes,
-- absolute expiry (ms; -1 none), type and logical content.
local out = {}
-- PEXPIRETIME is Redis 7.0+; TIME + PTTL gives the same on 6.2 (the
-- virtual clock is frozen while the script runs).
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local cursor = '0'
local function expire_at(k)
  local pttl = redis.call('PTTL', k)
  if pttl < 0 then return pttl end
  return now_ms + pttl
end
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
    -- Any other type (a stream, a module's): its DUMP bytes stand for it.
    else v = {} end
    table.insert(out, {k, redis.call('DUMP', k), expire_at(k), t, v})
  end
until cursor == '0'
return {redis.call('DBSIZE'), out}
