-- queue.claim {instance, claim_ttl_ms} (docs/PROTOCOL.md §4.3), one atomic step.
-- KEYS[1] = {prefix}q:index
-- ARGV[1] = {prefix}q:child:  (child keys are this plus the child id)
-- ARGV[2] = instance, ARGV[3] = claim_ttl_ms
--
-- Walks the index from the head (claim order) and claims the first child
-- that is queued or whose claim expired on server time. Live claims stay in
-- the index and are skipped; done children are removed from it.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
local batch = 64
local start = 0
while true do
  local members = redis.call('ZRANGE', KEYS[1], start, start + batch - 1)
  if #members == 0 then
    return {'empty'}
  end
  for _, member in ipairs(members) do
    local _, header_end = string.find(member, '^%d+:%d+:%d+:')
    local child = string.sub(member, header_end + 1)
    local key = ARGV[1] .. child
    local rec = redis.call('HMGET', key, 'state', 'claim_expires_at', 'attempt',
      'depth', 'payload')
    if rec[1] == 'queued' or (rec[1] == 'claimed' and now >= tonumber(rec[2])) then
      local attempt = tonumber(rec[3]) + 1
      redis.call('HSET', key, 'state', 'claimed', 'claimer', ARGV[2],
        'attempt', string.format('%d', attempt),
        'claim_expires_at', string.format('%d', now + ttl))
      return {'claimed', child, rec[4], rec[5], attempt}
    end
  end
  start = start + batch
end
