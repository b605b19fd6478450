if not touch(tonumber(A[1]), clock()) then return {} end
return redis.call('HGETALL', S)
