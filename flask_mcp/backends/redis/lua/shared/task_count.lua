-- KEYS: a caller's task ids (a sorted set), their records' sizes (a hash). A: the task id,
-- its creation time, its size, the bounds on records and bytes (0: none), the seconds
-- both are kept at least (0: no expiry). Counts the task against the caller's bounds, or
-- returns {bound, held} where it would pass one: the check and the count in one step,
-- so that workers creating tasks of one caller together cannot all pass it.
local IDS, SIZES = KEYS[1], KEYS[2]
local id, created, size = A[1], A[2], tonumber(A[3])
local most, most_bytes, secs = tonumber(A[4]), tonumber(A[5]), tonumber(A[6])
local count = redis.call('ZCARD', IDS)
if most > 0 and count >= most then return {'records', count} end
if most_bytes > 0 then
  local held = 0
  for _, each in ipairs(redis.call('HVALS', SIZES)) do held = held + tonumber(each) end
  if held + size > most_bytes then return {'bytes', held} end
end
redis.call('ZADD', IDS, created, id)
redis.call('HSET', SIZES, id, size)
for _, k in ipairs(KEYS) do
  if secs > 0 and redis.call('TTL', k) < secs then expire(k, secs) end
end
return {'ok', 0}
