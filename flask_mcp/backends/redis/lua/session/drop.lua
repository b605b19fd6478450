local st, owners = A[1], {}
if not has_stream(st) then return {0, ''} end
drop_stream(st, X, owners)
signal(Z, 60)
return {0, '', unpack(owners)}
