-- A: stream, the stream whose reader leaves or ''. Returns {0, stream to evict from or '',
-- owner, stream...}.
local owners = {}
local victim = evict({[A[1]] = X, g = XG}, owners, A[2] ~= '' and A[2] or nil)
return {0, victim or '', unpack(owners)}
