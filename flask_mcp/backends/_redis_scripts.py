"""The Lua scripts of the Redis backend.

Every script runs atomically in Redis and receives every key it touches in
``KEYS`` (the layout: :mod:`flask_mcp.backends._redis_keys`), all in one
cluster slot: a *session script* gets the keys of one session, a *shared
script* the ``{g}`` keys every worker shares; none mixes the two. Every script
starts with the same six arguments (see :data:`HEAD`); its own follow as
``A[1]``, ``A[2]``...

A session script gets ``KEYS = s, m, o, x:g, z:g`` of its session, then, if it
works on a stream, that stream's ``x`` and ``z`` (or a server-to-client
request's ``e`` and ``a``).

A script that changes a stream for its reader (an event appended while a reader
is attached, an attach, a detach, a drop) publishes the stream's event log key
``x`` on the channel ``P wake``, for the stream readers of every process
(:mod:`~flask_mcp.backends._redis_reader`). A script that changes a session's
record or ends the session publishes the record's key ``s`` on ``P session``,
for the processes that serve it from memory (:mod:`~flask_mcp.backends._redis_hot`).
"""

from __future__ import annotations

#: The arguments every script receives first, in this order.
HEAD = ("idle", "lifetime", "grace", "worker", "buffer", "dead_after")

LIBRARY = r"""
local IDLE, LIFE, GRACE = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ME, BUF, DEAD = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local A = {}
for i = 7, #ARGV do A[#A + 1] = ARGV[i] end
local function int(x) return string.format('%d', x) end
local function fmt(x) return string.format('%.6f', x) end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function millis()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function expire(k, secs) if secs > 0 then redis.call('EXPIRE', k, math.ceil(secs)) end end
"""

SESSION = r"""
local S, M, O, XG, ZG, X, Z = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
-- The answer the sweep writes for a request whose worker stopped: these two parts around its id.
local STOPPED_1 = '{"jsonrpc":"2.0","id":'
local STOPPED_2 = ',"error":{"code":-32603,"message":"The worker running this request stopped '
  .. 'before it answered; retry the request.","data":{"retryable":true}}}'
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
local function forget_stream(st, x, owners)
  disown(st, owners)
  redis.call('HDEL', M, 'n:' .. st, 'r:' .. st, 'c:' .. st)
  redis.call('DEL', x)
end

-- Drop the oldest retained messages (and the control events before each) while the session
-- holds more than BUF. ``xs`` maps the stream ids whose keys this script got to their event
-- log; returns the id of a stream holding the oldest message whose key it did not get.
local function evict(xs, owners)
  while redis.call('LLEN', O) > BUF do
    local victim = redis.call('LINDEX', O, 0)
    local x = xs[victim]
    if not x then return victim end
    redis.call('LPOP', O)
    local start, done = '-', false
    while not done do
      local entries = redis.call('XRANGE', x, start, '+', 'COUNT', 32)
      if #entries == 0 then break end
      for _, e in ipairs(entries) do
        redis.call('XDEL', x, e[1])
        start = '(' .. e[1]
        if e[2][2] == 'message' then done = true break end
      end
    end
    local reader = redis.call('HGET', M, 'r:' .. victim)
    if victim ~= 'g' and (not reader or reader == '0') and not redis.call('LPOS', O, victim) then
      forget_stream(victim, x, owners)
    end
  end
  return false
end

local function append_event(st, x, kind, msg, now, owners)
  local seq = redis.call('HINCRBY', M, 'n:' .. st, 1)
  redis.call('XADD', x, '0-' .. int(seq), 'k', kind, 'm', msg)
  if not QUIET and redis.call('HEXISTS', M, 'r:' .. st) == 1 then wake(x) end
  local secs = ttl(now)
  expire(x, secs)
  if kind == 'message' then
    if redis.call('RPUSH', O, st) == 1 then expire(O, secs) end
  elseif kind == 'end' then
    disown(st, owners)
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

-- Record traffic on the session and change this worker's count of its running requests.
local function touch(delta, now)
  if not exists() then return false end
  redis.call('HSET', S, 'last_seen', fmt(now))
  if delta ~= 0 then
    local f = 'b:' .. ME
    if redis.call('HINCRBY', S, f, delta) <= 0 then redis.call('HDEL', S, f) end
  end
  keep_alive(ttl(now))
  return true
end
"""

#: Scripts on the keys of one session (``KEYS``: see the module docstring).
SCRIPTS: dict[str, str] = {
    "create": r"""
-- A: handshake timeout (0: none), fields... Returns the creation time and the keys' ttl.
local now = clock()
local fields = {}
for i = 2, #A do fields[#fields + 1] = A[i] end
redis.call('HSET', S, 'created', fmt(now), 'last_seen', fmt(now), unpack(fields))
redis.call('HSET', M, 'id', 0)
local secs = ttl(now)
local hs = tonumber(A[1])
if hs > 0 then secs = math.ceil(hs + GRACE) end  -- until a request touches it
keep_alive(secs)
return {fmt(now), int(math.max(ttl(now), secs))}
""",
    "touch": r"""
if touch(tonumber(A[1]), clock()) then return 1 end
return 0
""",
    "load": r"""
if not touch(tonumber(A[1]), clock()) then return {} end
return redis.call('HGETALL', S)
""",
    "update": r"""
if not exists() then return 0 end
for i = 1, #A, 2 do redis.call('HSET', S, A[i], A[i + 1]) end
changed()
return 1
""",
    "subscription": r"""
local uri, add = A[1], A[2] == '1'
if not exists() then return 0 end
local list = cjson.decode(redis.call('HGET', S, 'subscriptions') or '[]')
local out, found = {}, false
for _, item in ipairs(list) do
  if item == uri then found = true end
  if item ~= uri or add then out[#out + 1] = item end
end
if add and not found then out[#out + 1] = uri end
if #out == 0 then redis.call('HSET', S, 'subscriptions', '[]')
else redis.call('HSET', S, 'subscriptions', cjson.encode(out)) end
changed()
return 1
""",
    "delete": r"""
local existed = 0
if exists() then existed = 1 end
local out = delete_session()
table.insert(out, 1, existed)
return out
""",
    "drop_uninitialized": r"""
if exists() and redis.call('HGET', S, 'initialized') == 'true' then return {0} end
local out = delete_session()
table.insert(out, 1, 1)
return out
""",
    "judge": r"""
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
""",
    "orphan": r"""
-- A: a dead worker, one of its streams: end it with an error answering its request.
local w, st = A[1], A[2]
if not exists() then return 0 end
redis.call('HDEL', S, 'b:' .. w)
if redis.call('HGET', M, 'w:' .. st) ~= w then return 0 end
local now, owners = clock(), {}
local rid = redis.call('HGET', M, 'q:' .. st)
if rid then append_event(st, X, 'message', STOPPED_1 .. rid .. STOPPED_2, now, owners) end
append_event(st, X, 'end', '', now, owners)
evict({[st] = X, g = XG}, owners)
return 1
""",
    "open": r"""
local st = A[1]
if not exists() then return 0 end
if redis.call('HSETNX', M, 'n:' .. st, 0) == 1 and st ~= 'g' then
  redis.call('HSET', M, 'w:' .. st, ME)
  if A[2] and A[2] ~= '' then redis.call('HSET', M, 'q:' .. st, A[2]) end
end
return 1
""",
    "append": r"""
-- A: stream, kind, message, '1' if the caller wakes the stream's readers itself.
-- Returns {seq, stream to evict from or '', reader token or '', owner, stream...}.
local st = A[1]
QUIET = A[4] == '1'
if not exists() then return {0, '', ''} end
local owners = {}
local seq = append_event(st, X, A[2], A[3], clock(), owners)
local reader = redis.call('HGET', M, 'r:' .. st) or ''
local victim = false
if A[2] == 'message' then victim = evict({[st] = X, g = XG}, owners) end
return {seq, victim or '', reader, unpack(owners)}
""",
    "emit": r"""
-- A: stream, its request's JSON id ('' none), '1' to attach a reader of this process, that
-- reader's token ('' none), then kind, message pairs. Opens the stream if new (owned by this
-- worker). The reader with that token is not woken: its process hands it the events itself.
-- Returns {token, 1 if that reader holds the stream, stream to evict from or '', count,
-- seq..., owner, stream...}; {} when the session is gone.
local st, rid, mine = A[1], A[2], A[4]
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
QUIET = held
local owners, seqs, message = {}, {}, false
for i = 5, #A - 1, 2 do
  seqs[#seqs + 1] = append_event(st, X, A[i], A[i + 1], now, owners)
  if A[i] == 'message' then message = true end
end
local victim = false
if message then victim = evict({[st] = X, g = XG}, owners) end
local out = {mine, held and 1 or 0, victim or '', #seqs}
for _, seq in ipairs(seqs) do out[#out + 1] = seq end
for _, o in ipairs(owners) do out[#out + 1] = o end
return out
""",
    "append_all": r"""
-- KEYS: the five keys every session script gets first (s, m, o, x:g, z:g) of each of
-- several sessions, on one Redis (not a cluster). A: kind, message. Appends the event to
-- each session's general stream, as append does with its caller waking the readers;
-- returns what append returns, one reply per session.
local kind, msg, now, out = A[1], A[2], clock(), {}
QUIET = true
for i = 1, #KEYS, 5 do
  S, M, O, XG, ZG = KEYS[i], KEYS[i + 1], KEYS[i + 2], KEYS[i + 3], KEYS[i + 4]
  X, Z = XG, ZG
  if exists() then
    local owners = {}
    local seq = append_event('g', X, kind, msg, now, owners)
    local reader = redis.call('HGET', M, 'r:g') or ''
    local victim = false
    if kind == 'message' then victim = evict({g = XG}, owners) end
    out[#out + 1] = {seq, victim or '', reader, unpack(owners)}
  else
    out[#out + 1] = {0, '', ''}
  end
end
return out
""",
    "evict": r"""
local owners = {}
local victim = evict({[A[1]] = X, g = XG}, owners)
return {0, victim or '', unpack(owners)}
""",
    "attach": r"""
local st = A[1]
if not exists() then return int(millis()) end
redis.call('HSETNX', M, 'n:' .. st, 0)
local tok = signal(Z, math.max(ttl(clock()), 60))
redis.call('HSET', M, 'r:' .. st, tok)
return tok
""",
    "detach": r"""
if redis.call('HGET', M, 'r:' .. A[1]) == A[2] then
  redis.call('HDEL', M, 'r:' .. A[1])
  signal(Z, 60)
end
return 1
""",
    "check": r"""
local st, after, tok = A[1], tonumber(A[2]), A[3]
if not exists() then return {'missing'} end
local last = redis.call('HGET', M, 'n:' .. st)
if not last then return {'missing'} end
if redis.call('HGET', M, 'r:' .. st) ~= tok then return {'superseded'} end
if tonumber(last) <= after then return {'wait'} end
local out = {'events'}
for _, e in ipairs(redis.call('XRANGE', X, '(0-' .. int(after), '+')) do
  out[#out + 1] = e[1]
  out[#out + 1] = e[2][2]
  out[#out + 1] = e[2][4]
end
return out
""",
    "first": r"""
if not exists() then return false end
local last = redis.call('HGET', M, 'n:' .. A[1])
if not last then return false end
local e = redis.call('XRANGE', X, '-', '+', 'COUNT', 1)
if #e > 0 then return tonumber(string.match(e[1][1], '%-(%d+)$')) end
return tonumber(last) + 1
""",
    "drop": r"""
local st, owners = A[1], {}
if not has_stream(st) then return {0, ''} end
redis.call('LREM', O, 0, st)
forget_stream(st, X, owners)
signal(Z, 60)
return {0, '', unpack(owners)}
""",
    "cursor": r"""
local st, seq = A[1], tonumber(A[2])
if redis.call('HEXISTS', M, 'n:' .. st) == 0 then return 0 end
if (tonumber(redis.call('HGET', M, 'c:' .. st) or '0') or 0) < seq then
  redis.call('HSET', M, 'c:' .. st, int(seq))
end
return 1
""",
    "cursor_all": r"""
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
""",
    "next_id": r"""
if not exists() then return 0 end
return redis.call('HINCRBY', M, 'id', 1)
""",
    "expect": r"""
-- KEYS[6], KEYS[7]: the request's marker and answer list.
if not exists() then return 0 end
redis.call('SET', X, '1', 'EX', 86400)
redis.call('DEL', Z)
return 1
""",
    "poll": r"""
if not redis.call('GET', X) then return {'none'} end
local msg = redis.call('LPOP', Z)
if msg then
  redis.call('DEL', X)
  return {'ok', msg}
end
return {'wait'}
""",
    "deliver": r"""
if redis.call('GET', X) ~= '1' then return 0 end
redis.call('SET', X, '2', 'KEEPTTL')
redis.call('RPUSH', Z, A[1])
redis.call('EXPIRE', Z, 86400)
return 1
""",
}


__all__ = ["HEAD", "LIBRARY", "SCRIPTS", "SESSION"]
