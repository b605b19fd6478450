-- A: stream, kind, message, '1' if the caller wakes the stream's readers itself, the write's
-- id ('' none: see repeated). Returns {seq, stream to evict from or '', reader token or '',
-- owner, stream...}; a write repeated returns its first sequence number, appending nothing.
local st, wid = A[1], A[5]
QUIET = A[4] == '1'
if not exists() then return {0, '', ''} end
local seen, ids = repeated(st, wid)
if seen then return {seen, '', redis.call('HGET', M, 'r:' .. st) or ''} end
local owners = {}
local seq = append_event(st, X, A[2], A[3], clock(), owners)
remember(st, wid, seq, ids)
local reader = redis.call('HGET', M, 'r:' .. st) or ''
local victim = false
if A[2] == 'message' then victim = evict({[st] = X, g = XG}, owners) end
return {seq, victim or '', reader, unpack(owners)}
