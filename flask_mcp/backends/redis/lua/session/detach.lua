-- A: stream, reader token ('': the reader of the process writing the stream, which took
-- its events there and never attached here). Returns {0, stream to evict from or '',
-- owner, stream...}: the streams left before this one are bounded by BYTES now (see
-- overflow). A stream that ended with no message kept is forgotten instead.
local owners, victim = {}, false
local reader = redis.call('HGET', M, 'r:' .. A[1])
if (A[2] ~= '' and reader == A[2]) or (A[2] == '' and not reader and has_stream(A[1])) then
  redis.call('HDEL', M, 'r:' .. A[1])
  if spent(A[1]) then
    forget_stream(A[1], X, owners)  -- it ended with nothing a resume would get
  else
    leave(A[1])
    victim = evict({[A[1]] = X, g = XG}, owners, A[1])
  end
  signal(Z, 60)
end
return {0, victim or '', unpack(owners)}
