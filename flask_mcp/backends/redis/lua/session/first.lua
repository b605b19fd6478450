if not exists() then return false end
local last = redis.call('HGET', M, 'n:' .. A[1])
if not last then return false end
local e = redis.call('XRANGE', X, '-', '+', 'COUNT', 1)
if #e > 0 then return tonumber(string.match(e[1][1], '%-(%d+)$')) end
return tonumber(last) + 1
