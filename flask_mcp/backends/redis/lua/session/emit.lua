-- A: stream, its request's JSON id ('' none), '1' to attach a reader of this process, that
-- reader's token ('' none), '1' when that process's reader left before the stream was here,
-- the write's id ('' none: see repeated), then kind, message pairs. Opens the stream if new
-- (owned by this worker). The reader with that token is not woken: its process hands it
-- the events itself. A write repeated appends nothing and returns its first sequence numbers.
-- Returns {token, 1 if that reader holds the stream, stream to evict from or '', count,
-- seq..., owner, stream...}; {} when the session is gone.
local st, rid, mine, wid = A[1], A[2], A[4], A[6]
if not exists() then return {} end
if redis.call('HSETNX', M, 'n:' .. st, 0) == 1 and st ~= 'g' then
  redis.call('HSET', M, 'w:' .. st, ME)
  if rid ~= '' then redis.call('HSET', M, 'q:' .. st, rid) end
end
local now = clock()
if A[3] == '1' then
  QUIET = true
  mine = signal(Z, math.max(ttl(now), 60))
  redis.call('HSET', M, 'r:' .. st, mine)
end
local held = mine ~= '' and redis.call('HGET', M, 'r:' .. st) == mine
if A[5] == '1' and redis.call('HEXISTS', M, 'r:' .. st) == 0 then leave(st) end
QUIET = held
local owners, seqs, message = {}, {}, false
local count = math.floor((#A - 6) / 2)
local seen, ids = false, false
if count > 0 then seen, ids = repeated(st, wid) end
if seen then
  for i = 1, count do seqs[i] = seen - count + i end
else
  for i = 7, #A - 1, 2 do
    seqs[#seqs + 1] = append_event(st, X, A[i], A[i + 1], now, owners)
    if A[i] == 'message' then message = true end
  end
  if count > 0 then remember(st, wid, seqs[count], ids) end
end
local victim = false
if message then victim = evict({[st] = X, g = XG}, owners) end
local out = {mine, held and 1 or 0, victim or '', #seqs}
for _, seq in ipairs(seqs) do out[#out + 1] = seq end
for _, o in ipairs(owners) do out[#out + 1] = o end
return out
