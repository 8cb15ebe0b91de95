-- queue.claim {instance, claim_ttl_ms} (docs/PROTOCOL.md §4.3), one atomic step.
-- KEYS[1] = the index; ARGV = the child key prefix, instance, claim_ttl_ms
-- Walks the index in claim order and claims the first child that is queued
-- or whose claim ran out (server time). Done children are not in the index.
local now = server_now()
local start = 0
while true do
  local members = redis.call('ZRANGE', KEYS[1], start, start + 63)
  if #members == 0 then return {'empty'} end
  for _, member in ipairs(members) do
    local child = member:sub(55) -- after "<19 digits>:<16 digits>:<16 digits>:" (54 characters)
    local key = ARGV[1] .. child
    local r = redis.call('HMGET', key, 'state', 'claim_expires_at', 'attempt', 'depth', 'payload')
    if r[1] == 'queued' or (r[1] == 'claimed' and now >= tonumber(r[2])) then
      local attempt = string.format('%d', r[3] + 1)
      redis.call('HSET', key, 'state', 'claimed', 'claimer', ARGV[2], 'attempt', attempt,
        'claim_expires_at', string.format('%d', now + ARGV[3]))
      return {'claimed', child, r[4], r[5], attempt}
    end
  end
  start = start + 64
end
