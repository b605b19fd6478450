-- A: the reason if it is gone, then the live workers. Returns {reason, time, streams...}
-- when it ended, else {'busy' or 'keep', last traffic, creation time}.
local now = clock()
local function ended(reason)
  local out = delete_session()
  table.insert(out, 1, fmt(now))
  table.insert(out, 1, reason)
  return out
end
if not exists() then return ended(A[1]) end
local live, busy = {}, false
for i = 2, #A do live[A[i]] = true end
local h = redis.call('HGETALL', S)
for i = 1, #h, 2 do
  if string.sub(h[i], 1, 2) == 'b:' then
    if live[string.sub(h[i], 3)] then
      if tonumber(h[i + 1]) > 0 then busy = true end
    else
      redis.call('HDEL', S, h[i])
      redis.call('HDEL', M, 'i:' .. string.sub(h[i], 3))
    end
  end
end
local f = redis.call('HMGET', S, 'created', 'last_seen')
if busy then
  keep_alive(math.max(IDLE, 0) + GRACE)
  return {'busy', fmt(now), f[1]}
end
local reason = false
if LIFE > 0 and now - tonumber(f[1]) > LIFE then reason = 'lifetime'
elseif IDLE > 0 and now - tonumber(f[2]) > IDLE then reason = 'idle' end
if reason then return ended(reason) end
return {'keep', f[2], f[1]}
