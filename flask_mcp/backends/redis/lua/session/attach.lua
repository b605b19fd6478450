local st = A[1]
if not exists() then return int(millis()) end
-- A request stream that ended and was forgotten is not opened again: a read says missing.
if st ~= 'g' and redis.call('HEXISTS', M, 'n:' .. st) == 0 then return int(millis()) end
redis.call('HSETNX', M, 'n:' .. st, 0)
local tok = signal(Z, math.max(ttl(clock()), 60))
redis.call('HSET', M, 'r:' .. st, tok)
unleave(st)
return tok
