-- Every key under the prefix (ARGV[1] is its SCAN pattern), in one round
-- trip: the whole database's size, then for each key its name, DUMP bytes,
-- absolute expiry (ms; -1 none), type and logical content (a hash field's
-- own expiry, where the server has them, in its value item).
local out = {}
-- PEXPIRETIME is Redis 7.0+; TIME + PTTL gives the same on 6.2 (the
-- virtual clock is frozen while the script runs).
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local cursor = '0'
-- Whether the server keeps a hash field's own expiry (HPEXPIRE: Valkey 9,
-- Redis 7.4+): asked once, of a key that does not exist, instead of once a
-- hash (elsewhere the command is unknown, an error each time).
local probe = redis.pcall('HPEXPIRETIME', '\0storeproof:probe', 'FIELDS', 1, 'f')
local field_ttls = type(probe) == 'table' and not probe.err
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
    if t == 'hash' then
      v = redis.call('HGETALL', k)
      -- Each field's own expiry, where the server keeps them: written
      -- into its value item as "\0pexpireat:<ms>", so that it is part
      -- of the key's content.
      if field_ttls and #v > 0 then
        local fields = {}
        for i = 1, #v, 2 do table.insert(fields, v[i]) end
        local ttls = redis.pcall('HPEXPIRETIME', k, 'FIELDS', #fields, unpack(fields))
        if type(ttls) == 'table' and not ttls.err then
          for i, at in ipairs(ttls) do
            if at > 0 then v[2 * i] = v[2 * i] .. '\0pexpireat:' .. at end
          end
        end
      end
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
