-- Shared by the rate scripts; prepended to every script when it is built
-- (Redis scripts cannot include one another).
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

