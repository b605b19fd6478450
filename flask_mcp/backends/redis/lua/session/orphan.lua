-- A: a dead worker, one of its streams: end it with an error answering its request.
local w, st = A[1], A[2]
if not exists() then return 0 end
redis.call('HDEL', S, 'b:' .. w)
redis.call('HDEL', M, 'i:' .. w)
if redis.call('HGET', M, 'w:' .. st) ~= w then return 0 end
local now, owners = clock(), {}
local rid = redis.call('HGET', M, 'q:' .. st)
if rid then append_event(st, X, 'message', STOPPED_1 .. rid .. STOPPED_2, now, owners) end
append_event(st, X, 'end', '', now, owners)
evict({[st] = X, g = XG}, owners)
return 1
