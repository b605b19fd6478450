-- KEYS: the five keys every session script gets first (s, m, o, x:g, z:g) of each of
-- several sessions, on one Redis (not a cluster). A: kind, message, then each session's
-- write id ('' none: see repeated). Appends the event to each session's general stream, as
-- append does with its caller waking the readers; returns what append returns, one reply
-- per session.
local kind, msg, now, out = A[1], A[2], clock(), {}
QUIET = true
for i = 1, #KEYS, 5 do
  S, M, O, XG, ZG = KEYS[i], KEYS[i + 1], KEYS[i + 2], KEYS[i + 3], KEYS[i + 4]
  X, Z = XG, ZG
  local wid = A[3 + (i - 1) / 5]
  if exists() then
    local seen, ids = repeated('g', wid)
    if seen then
      out[#out + 1] = {seen, '', redis.call('HGET', M, 'r:g') or ''}
    else
      local owners = {}
      local seq = append_event('g', X, kind, msg, now, owners)
      remember('g', wid, seq, ids)
      local reader = redis.call('HGET', M, 'r:g') or ''
      local victim = false
      if kind == 'message' then victim = evict({g = XG}, owners) end
      out[#out + 1] = {seq, victim or '', reader, unpack(owners)}
    end
  else
    out[#out + 1] = {0, '', ''}
  end
end
return out
