-- KEYS: the sizes of a caller's task records (a hash). A: a task id, its record's new
-- size, the caller's byte bound. Records the new size, or returns {0, held} where the
-- caller's records would pass the bound with it: the check and the new size in one step,
-- so that the caller's tasks growing together on several workers cannot all pass it.
local SIZES = KEYS[1]
local id, size, most = A[1], tonumber(A[2]), tonumber(A[3])
local held, mine = 0, tonumber(redis.call('HGET', SIZES, id) or 0)
for _, each in ipairs(redis.call('HVALS', SIZES)) do held = held + tonumber(each) end
if held - mine + size > most then return {0, held} end
redis.call('HSET', SIZES, id, size)
return {1, held}
