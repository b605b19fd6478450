-- KEYS: the five first keys of each of several sessions, on one Redis (not a cluster).
-- A: a stream and a sequence number per session. Does what cursor does, for each.
local out = {}
for i = 1, #KEYS, 5 do
  M = KEYS[i + 1]
  local j = (i - 1) / 5 * 2 + 1
  local st, seq = A[j], tonumber(A[j + 1])
  if redis.call('HEXISTS', M, 'n:' .. st) == 0 then
    out[#out + 1] = 0
  else
    if (tonumber(redis.call('HGET', M, 'c:' .. st) or '0') or 0) < seq then
      redis.call('HSET', M, 'c:' .. st, int(seq))
    end
    out[#out + 1] = 1
  end
end
return out
