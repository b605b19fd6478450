-- A: stream, kind, message, '1' if the caller wakes the stream's readers itself.
-- Returns {seq, stream to evict from or '', reader token or '', owner, stream...}.
local st = A[1]
QUIET = A[4] == '1'
if not exists() then return {0, '', ''} end
local owners = {}
local seq = append_event(st, X, A[2], A[3], clock(), owners)
local reader = redis.call('HGET', M, 'r:' .. st) or ''
local victim = false
if A[2] == 'message' then victim = evict({[st] = X, g = XG}, owners) end
return {seq, victim or '', reader, unpack(owners)}
