-- rate.pause {provider, until_ms} (SPEC 2.3), one atomic step.
-- KEYS[1] = {prefix}rate:{provider}:pause
-- ARGV[1] = until_ms (canonical decimal)
-- A pause only lengthens: the answer is the pause in force afterwards.
-- Compares two canonical decimal integers given as strings (-1, 0, 1).
-- Pause times are any whole number a caller names, beyond what a Lua double
-- holds exactly, so they are stored and compared as strings.
local function cmp(a, b)
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then
    if na then return -1 end
    return 1
  end
  if a == b then return 0 end
  local r
  if #a ~= #b then
    if #a < #b then r = -1 else r = 1 end
  else
    if a < b then r = -1 else r = 1 end
  end
  if na then return -r end
  return r
end

local current = redis.call('GET', KEYS[1])
if current and cmp(current, ARGV[1]) >= 0 then
  return {'paused', current}
end
redis.call('SET', KEYS[1], ARGV[1])
return {'paused', ARGV[1]}
