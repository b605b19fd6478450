if redis.call('HGET', M, 'r:' .. A[1]) == A[2] then
  redis.call('HDEL', M, 'r:' .. A[1])
  leave(A[1])
  signal(Z, 60)
end
return 1
