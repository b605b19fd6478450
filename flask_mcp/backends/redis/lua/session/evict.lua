local owners = {}
local victim = evict({[A[1]] = X, g = XG}, owners)
return {0, victim or '', unpack(owners)}
