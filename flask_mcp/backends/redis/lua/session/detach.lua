-- A: stream, reader token. Returns {0, stream to evict from or '', owner, stream...}: the
-- streams left before this one are bounded by BYTES now (see overflow).
local owners, victim = {}, false
if redis.call('HGET', M, 'r:' .. A[1]) == A[2] then
  redis.call('HDEL', M, 'r:' .. A[1])
  leave(A[1])
  signal(Z, 60)
  victim = evict({[A[1]] = X, g = XG}, owners, A[1])
end
return {0, victim or '', unpack(owners)}
