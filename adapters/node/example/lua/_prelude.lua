-- Put in front of every script of this folder when it is loaded (Redis
-- scripts cannot include one another).

-- Server time in ms: lease and queue scripts decide on it, never on clock_ms.
local function server_now()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end

-- cmp(a, b) is -1, 0 or 1 for two canonical decimal integers given as
-- strings: until_ms may be any whole number up to 2^63 - 1, beyond what a
-- Lua double holds exactly, so pauses are stored and compared as text.
local function cmp(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na and -1 or 1 end
  if a == b then return 0 end
  local r = (#a < #b or (#a == #b and a < b)) and -1 or 1
  return na and -r or r
end
