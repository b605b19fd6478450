-- Every session script starts with this (after library.lua): its keys and helpers.
local S, M, O, XG, ZG, X, Z = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
-- The answer the sweep writes for a request whose worker stopped: these two parts around its id.
local STOPPED_1 = '{"jsonrpc":"2.0","id":'
local STOPPED_2 = ',"error":{"code":-32603,"message":"The worker running this request stopped '
  .. 'before it answered: the request may have been carried out in part. Check its effects '
  .. 'before sending it again.","data":{"retryable":false}}}'
local function exists() return redis.call('EXISTS', S) == 1 end
local function has_stream(st) return redis.call('HEXISTS', M, 'n:' .. st) == 1 end

-- Seconds Redis keeps an idle session: its limits plus a grace the reaper uses first.
local function ttl(now)
  local left = -1
  if IDLE > 0 then left = IDLE end
  if LIFE > 0 then
    local born = tonumber(redis.call('HGET', S, 'created') or '') or now
    local l = born + LIFE - now
    if left < 0 or l < left then left = l end
  end
  if left < 0 then return 0 end
  return math.ceil(math.max(left, 0) + GRACE)
end
local function keep_alive(secs)
  for _, k in ipairs({S, M, O, XG, ZG}) do expire(k, secs) end
end

-- Reader tokens grow within a session; a lost counter restarts above every earlier one.
local function token()
  if redis.call('EXISTS', M) == 0 then return int(millis()) end
  local v = redis.call('HINCRBY', M, 'tok', 1)
  if v == 1 then
    v = millis()
    redis.call('HSET', M, 'tok', int(v))
  end
  return int(v)
end
-- Wake the stream readers of every process waiting on the event log x: channel ``P wake``
-- (P: the prefix, before the hash tag), message x. Not a key: it works on a cluster too.
local QUIET = false  -- the caller publishes the wake-ups itself, several to a message
local function wake(x)
  if not QUIET then redis.call('PUBLISH', string.match(x, '^(.-){') .. 'wake', x) end
end
-- Wake the readers blocked on a stream; they re-check their token and the stream.
local function signal(z, secs)
  if X then wake(X) end
  local tok = token()
  local r = redis.pcall('XADD', z, 'MAXLEN', '1', tok .. '-0', 't', '1')
  if type(r) == 'table' and r.err then
    redis.call('DEL', z)
    redis.call('XADD', z, 'MAXLEN', '1', tok .. '-0', 't', '1')
  end
  expire(z, secs)
  return tok
end

-- Forget who owns a stream; its owner (to take out of the owner's set) goes to ``owners``.
local function disown(st, owners)
  local owner = redis.call('HGET', M, 'w:' .. st)
  if owner then
    redis.call('HDEL', M, 'w:' .. st, 'q:' .. st)
    owners[#owners + 1] = owner
    owners[#owners + 1] = st
  end
end

-- What the streams whose reader left hold (a client may resume them), in M: 'y:<st>' the
-- bytes of a stream's messages, 'a:<st>' when it was left (a count, 'an'), 'al' how many
-- are left and 'ab' their bytes. Past BYTES, the streams left longest ago go (see evict).
local function grow(st, n)
  redis.call('HINCRBY', M, 'y:' .. st, n)
  if redis.call('HEXISTS', M, 'a:' .. st) == 1 then redis.call('HINCRBY', M, 'ab', n) end
end
local function size_of(st) return tonumber(redis.call('HGET', M, 'y:' .. st) or '0') end
local function leave(st)
  if st == 'g' or redis.call('HEXISTS', M, 'a:' .. st) == 1 then return end
  redis.call('HSET', M, 'a:' .. st, redis.call('HINCRBY', M, 'an', 1))
  redis.call('HINCRBY', M, 'al', 1)
  redis.call('HINCRBY', M, 'ab', size_of(st))
end
local function unleave(st)
  if redis.call('HDEL', M, 'a:' .. st) == 1 then
    redis.call('HINCRBY', M, 'al', -1)
    -- 0 - n, not -n: Lua's -0 reaches Redis as '-0', which HINCRBY refuses
    redis.call('HINCRBY', M, 'ab', 0 - size_of(st))
  end
end
-- While the streams left hold over BYTES: the stream left longest ago that holds messages,
-- else the one left last with the bytes over (its oldest messages go, see trim); false when
-- under. ``leaving``: the stream whose reader leaves now (left last), which counts for
-- nothing: it may be read to its end and dropped in a moment.
local function overflow(leaving)
  local count = tonumber(redis.call('HGET', M, 'al') or '0')
  local bytes = tonumber(redis.call('HGET', M, 'ab') or '0')
  if leaving and redis.call('HEXISTS', M, 'a:' .. leaving) == 1 then
    count, bytes = count - 1, bytes - size_of(leaving)
  end
  if BYTES <= 0 or count < 1 or bytes <= BYTES then return false end
  local fields, when, size = redis.call('HGETALL', M), {}, {}
  local newest, high = false, false
  for i = 1, #fields, 2 do
    local kind, st = string.match(fields[i], '^([ay]):(.*)$')
    local n = tonumber(fields[i + 1])
    if kind == 'y' then
      size[st] = n
    elseif kind == 'a' and st ~= leaving then
      when[st] = n
      if not high or n > high then newest, high = st, n end
    end
  end
  local oldest, low = false, false
  for st, n in pairs(when) do
    if st ~= newest and (size[st] or 0) > 0 and (not low or n < low) then oldest, low = st, n end
  end
  if oldest then return oldest, false end
  return newest, bytes - BYTES
end

local function forget_stream(st, x, owners)
  disown(st, owners)
  unleave(st)
  redis.call('HDEL', M, 'n:' .. st, 'r:' .. st, 'c:' .. st, 'y:' .. st, 'd:' .. st)
  redis.call('DEL', x)
end
-- Drop a stream: its place in the session's order of messages too.
local function drop_stream(st, x, owners)
  redis.call('LREM', O, 0, st)
  forget_stream(st, x, owners)
end
-- Whether a request writes the stream still (opened for one, not ended): its sequence
-- numbers must go on whatever is evicted from it.
local function writing(st) return redis.call('HEXISTS', M, 'w:' .. st) == 1 end
-- Whether a stream keeps a message a client resuming it would get (its bytes, see grow).
local function holds_messages(st) return size_of(st) > 0 end
-- Whether a stream can give nobody anything more: not the general stream, no request writes
-- it, and it keeps no message.
local function spent(st) return st ~= 'g' and not writing(st) and not holds_messages(st) end

-- Drop the oldest message of stream ``st`` (event log ``x``) and the control events before
-- it; return its size, or nil when the stream holds no message.
local function drop_first_message(st, x)
  local start = '-'
  while true do
    local entries = redis.call('XRANGE', x, start, '+', 'COUNT', 32)
    if #entries == 0 then return nil end
    for _, e in ipairs(entries) do
      redis.call('XDEL', x, e[1])
      start = '(' .. e[1]
      if e[2][2] == 'message' then
        grow(st, 0 - #e[2][4])
        return #e[2][4]
      end
    end
  end
end

-- Drop the oldest messages of a stream left (and the events before each) until ``excess``
-- bytes of them went: its sequence goes on, so a resume from before them gets 410. Left with
-- no message and no request writing it, it is forgotten.
local function trim(st, x, excess, owners)
  while excess > 0 do
    local size = drop_first_message(st, x)
    if not size then break end
    redis.call('LREM', O, 1, st)  -- its first entry in the session's order of messages
    excess = excess - size
  end
  if spent(st) then forget_stream(st, x, owners) end
end

-- Drop the oldest retained messages (and the control events before each) while the session
-- holds more than BUF, then the streams left longest ago while those left hold more than
-- BYTES (``leaving``: see overflow). ``xs`` maps the stream ids whose keys this script got
-- to their event log; returns the id of a stream to evict from or drop whose key it did not
-- get.
local function evict(xs, owners, leaving)
  while redis.call('LLEN', O) > BUF do
    local victim = redis.call('LINDEX', O, 0)
    local x = xs[victim]
    if not x then return victim end
    redis.call('LPOP', O)
    drop_first_message(victim, x)
    local reader = redis.call('HGET', M, 'r:' .. victim)
    if (not reader or reader == '0') and spent(victim) then
      forget_stream(victim, x, owners)
    end
  end
  local left, over = overflow(leaving)
  while left do
    local x = xs[left]
    if not x then return left end
    if over then
      trim(left, x, over, owners)
    elseif writing(left) then  -- its messages go; its sequence and its place among those left stay
      redis.call('LREM', O, 0, left)
      redis.call('DEL', x)
      grow(left, 0 - size_of(left))
    else
      drop_stream(left, x, owners)
    end
    left, over = overflow(leaving)
  end
  return false
end

-- The ids of a stream's last WRITES writes and the last sequence number each appended, in M:
-- 'd:<st>' = ' id=seq id=seq...' (forgotten with the stream). A write sent again with its id
-- (redis-py resending a command whose reply the connection lost, an owed answer written
-- again) is found there and not appended twice. ``repeated`` returns that sequence number
-- (false: a new write, or no id) and the ids, for ``remember``.
local WRITES = 16  -- WRITE_IDS in flask_mcp/backends/base.py
local function repeated(st, wid)
  if not wid or wid == '' then return false, false end
  local ids = redis.call('HGET', M, 'd:' .. st)
  if not ids then return false, '' end
  local at = string.find(ids, ' ' .. wid .. '=', 1, true)
  if not at then return false, ids end
  return tonumber(string.match(ids, '^%d+', at + #wid + 2)), ids
end
-- ``ids`` (' a b c...') without its oldest ids past the last ``n``.
local function last(ids, n)
  local _, count = string.gsub(ids, ' ', ' ')
  while count > n do
    ids = string.sub(ids, string.find(ids, ' ', 2, true))
    count = count - 1
  end
  return ids
end
local function remember(st, wid, seq, ids)
  if not wid or wid == '' then return end
  redis.call('HSET', M, 'd:' .. st, last((ids or '') .. ' ' .. wid .. '=' .. int(seq), WRITES))
end

local function append_event(st, x, kind, msg, now, owners)
  local seq = redis.call('HINCRBY', M, 'n:' .. st, 1)
  redis.call('XADD', x, '0-' .. int(seq), 'k', kind, 'm', msg)
  if not QUIET and redis.call('HEXISTS', M, 'r:' .. st) == 1 then wake(x) end
  local secs = ttl(now)
  expire(x, secs)
  if kind == 'message' then
    grow(st, #msg)
    if redis.call('RPUSH', O, st) == 1 then expire(O, secs) end
  elseif kind == 'end' then
    disown(st, owners)
    -- left by its client, ended with nothing a resume would get: nobody reads it again
    if redis.call('HEXISTS', M, 'a:' .. st) == 1 and spent(st) then
      forget_stream(st, x, owners)
    end
  end
  return seq
end

-- Tell every process that the session's record changed or the session ended: channel
-- ``P session``, message S (the processes serving it from memory forget it, see _redis_hot).
local function changed() redis.call('PUBLISH', string.match(S, '^(.-){') .. 'session', S) end

-- End the session's keys; return its stream ids and their owners (st, owner or '').
local function delete_session()
  changed()
  local out = {}
  for _, f in ipairs(redis.call('HKEYS', M)) do
    local kind, st = string.match(f, '^(%a):(.*)$')
    if kind == 'n' then
      out[#out + 1] = st
      out[#out + 1] = redis.call('HGET', M, 'w:' .. st) or ''
    end
  end
  redis.call('DEL', S, M, O, XG)
  return out
end

-- The ids of this worker's last COUNTS changes of its busy count, in M: 'i:WORKER' =
-- ' id id...' (forgotten with the worker's count when it dies). A change sent again with its
-- id (redis-py resending a command whose reply the connection lost, a change the Ledger
-- sends again because no reply came) is found there and not made twice. ``counted`` tells
-- whether the change ``wid`` was made before, and remembers it.
local COUNTS = 32
local function counted(wid)
  if not wid or wid == '' then return false end
  local f = 'i:' .. ME
  local ids = redis.call('HGET', M, f) or ''
  if string.find(ids .. ' ', ' ' .. wid .. ' ', 1, true) then return true end
  redis.call('HSET', M, f, last(ids .. ' ' .. wid, COUNTS))
  return false
end
-- Record traffic on the session and change this worker's count of its running requests by
-- ``delta`` unless the change ``wid`` was made before (see counted).
local function touch(delta, now, wid)
  if not exists() then return false end
  redis.call('HSET', S, 'last_seen', fmt(now))
  if delta ~= 0 and not counted(wid) then
    local f = 'b:' .. ME
    if redis.call('HINCRBY', S, f, delta) <= 0 then redis.call('HDEL', S, f) end
  end
  keep_alive(ttl(now))
  return true
end
