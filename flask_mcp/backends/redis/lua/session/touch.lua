-- A: the change of this worker's busy count, its id ('' none: see counted).
if touch(tonumber(A[1]), clock(), A[2]) then return 1 end
return 0
