local st = A[1]
if not exists() then return int(millis()) end
-- A request stream that ended and was forgotten is not opened again: a read says missing.
if st == 'g' then
  redis.call('HSETNX', M, 'n:g', 0)  -- the general stream opens on its first reader
elseif not has_stream(st) then
  return int(millis())
end
local tok = signal(Z, math.max(ttl(clock()), 60))
redis.call('HSET', M, 'r:' .. st, tok)
unleave(st)
return tok
