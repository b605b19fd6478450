local st = A[1]
if not exists() then return 0 end
if redis.call('HSETNX', M, 'n:' .. st, 0) == 1 and st ~= 'g' then
  redis.call('HSET', M, 'w:' .. st, ME)
  if A[2] and A[2] ~= '' then redis.call('HSET', M, 'q:' .. st, A[2]) end
end
return 1
