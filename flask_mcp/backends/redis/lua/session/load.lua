-- A: the change of this worker's busy count, its id ('' none: see counted).
if not touch(tonumber(A[1]), clock(), A[2]) then return {} end
return redis.call('HGETALL', S)
