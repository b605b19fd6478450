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
