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
