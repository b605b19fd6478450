local st, seq = A[1], tonumber(A[2])
if redis.call('HEXISTS', M, 'n:' .. st) == 0 then return 0 end
if (tonumber(redis.call('HGET', M, 'c:' .. st) or '0') or 0) < seq then
  redis.call('HSET', M, 'c:' .. st, int(seq))
end
return 1
