if touch(tonumber(A[1]), clock()) then return 1 end
return 0
