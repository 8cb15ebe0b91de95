-- queue.save {child, depth, payload} (docs/PROTOCOL.md §4.3), one atomic step.
-- KEYS = the child's hash, the index (zset, every score 0), the save counter
-- ARGV = child, depth (canonical decimal), payload, depth rank (19 digits)
-- Index members are "<depth rank>:<saved at>:<save seq>:<child>", fixed-width
-- numbers, so the index's lexical order is the claim order: deepest first,
-- then longest waiting, then save order.
local state = redis.call('HGET', KEYS[1], 'state')
if state then return {'exists', state} end -- never re-queued, whatever its state
local seq = redis.call('INCR', KEYS[3]) -- the first write: a full server refuses it
local member = string.format('%s:%016d:%016d:%s', ARGV[4], server_now(), seq, ARGV[1])
redis.call('HSET', KEYS[1], 'state', 'queued', 'depth', ARGV[2], 'payload', ARGV[3], 'attempt', '0', 'member', member)
redis.call('ZADD', KEYS[2], 0, member)
return {'saved'}
