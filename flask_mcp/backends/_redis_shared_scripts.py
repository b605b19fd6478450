"""The Lua scripts of the Redis backend on the ``{g}`` keys every worker shares.

They start with the library and the arguments of every script
(:data:`~flask_mcp.backends._redis_scripts.LIBRARY`, :data:`~._redis_scripts.HEAD`)
and never touch a session's keys, so that each stays in one Redis Cluster slot.
"""

from __future__ import annotations

#: Scripts on the ``{g}`` keys every worker shares.
SHARED: dict[str, str] = {
    "register": r"""
-- KEYS: workers. Mark this worker alive (before it counts requests in a session).
redis.call('ZADD', KEYS[1], fmt(clock()), ME)
return 1
""",
    "beat": r"""
-- KEYS: workers, alive. Mark this worker alive; return the dead workers (up to 10).
-- Silence is measured only while Redis was reachable: when no process reached Redis for
-- DEAD / 2 seconds (an outage, a stall, or every worker gone), that gap is taken off every
-- worker's silence.
local workers, alive = KEYS[1], KEYS[2]
local now = clock()
redis.call('ZADD', workers, fmt(now), ME)
local last = tonumber(redis.call('GET', alive) or '')
redis.call('SET', alive, fmt(now))
if not last or now - last > DEAD / 2 then
  local gap = now - (last or 0)
  local members = redis.call('ZRANGE', workers, 0, -1, 'WITHSCORES')
  for i = 1, #members, 2 do
    local score = math.min(tonumber(members[i + 1]) + gap, now)
    redis.call('ZADD', workers, fmt(score), members[i])
  end
end
return redis.call('ZRANGEBYSCORE', workers, '-inf', '(' .. fmt(now - DEAD), 'LIMIT', 0, 10)
""",
    "stale": r"""
-- KEYS: workers, born, seen, claims. A: batch. Returns {live count, live workers..., sid,
-- reason...}: the sessions that may be past a limit, with the reason if they are gone, each
-- claimed for a minute (so that one reaper judges it; the caller drops its claims).
local now, batch = clock(), tonumber(A[1])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. fmt(now - 60))
local out = {}
local live = redis.call('ZRANGEBYSCORE', KEYS[1], fmt(now - DEAD), '+inf')
out[1] = #live
for _, w in ipairs(live) do out[#out + 1] = w end
local done = {}
local function older(k, limit, reason)
  local cut = '(' .. fmt(now - limit)
  for _, sid in ipairs(redis.call('ZRANGEBYSCORE', k, '-inf', cut, 'LIMIT', 0, batch)) do
    if not done[sid] and redis.call('ZADD', KEYS[4], 'NX', fmt(now), sid) == 1 then
      done[sid] = true
      out[#out + 1] = sid
      out[#out + 1] = reason
    end
  end
end
if LIFE > 0 then older(KEYS[2], LIFE, 'lifetime') end
if IDLE > 0 then older(KEYS[3], IDLE, 'idle') end
return out
""",
    "admit": r"""
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
""",
}


__all__ = ["SHARED"]
