-- KEYS: seen, born, hs, own. A: sid, time, limit, handshake timeout, quota, ttl.
-- Returns {verdict, expired handshakes count, expired..., candidates to check...}.
local SEEN, BORN, HS, OWN = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local sid, now, limit = A[1], tonumber(A[2]), tonumber(A[3])
local hs, quota, secs = tonumber(A[4]), tonumber(A[5]), tonumber(A[6])
local expired = {}
if hs > 0 then  -- sessions whose handshake may never have finished (more when full)
  local batch = 10
  if redis.call('ZCARD', SEEN) >= limit then batch = 100 end
  local cut = '(' .. fmt(now - hs)
  expired = redis.call('ZRANGEBYSCORE', HS, '-inf', cut, 'LIMIT', 0, batch)
  for _, old in ipairs(expired) do redis.call('ZREM', HS, old) end
end
local out = {'ok', #expired, unpack(expired)}
if redis.call('ZCARD', SEEN) >= limit then
  out[1] = 'full'
  for _, old in ipairs(redis.call('ZRANGE', SEEN, 0, 9)) do out[#out + 1] = old end
  return out
end
if quota > 0 and redis.call('ZCARD', OWN) >= quota then
  out[1] = 'quota'
  for _, old in ipairs(redis.call('ZRANGE', OWN, 0, -1)) do out[#out + 1] = old end
  return out
end
redis.call('ZADD', SEEN, fmt(now), sid)
redis.call('ZADD', BORN, fmt(now), sid)
if hs > 0 then redis.call('ZADD', HS, fmt(now), sid) end
if quota > 0 then
  redis.call('ZADD', OWN, fmt(now), sid)
  local left = redis.call('TTL', OWN)
  if left < secs then expire(OWN, secs) end
end
return out
