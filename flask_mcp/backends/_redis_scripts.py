"""The Lua scripts of the Redis backend.

Every script runs atomically in Redis and starts with the same library and
the same seven arguments (see :data:`HEAD`); a script's own arguments follow
as ``A[1]``, ``A[2]``... Keys are built inside the scripts from the prefix
``P`` (so the backend needs a single Redis, not a cluster):

``P s:SID``        hash: the session record (JSON values) and ``b:WORKER`` busy counts
``P m:SID``        hash: ``id`` (request ids), per stream ``n:ST`` last seq, ``r:ST``
                   reader token, ``c:ST`` cursor, ``w:ST`` the worker that owns it, ``q:ST``
                   the JSON id of the request it answers (for the sweep's error)
``P o:SID``        list: the stream id of every retained message, oldest first
``P x:SID:ST``     stream: the events of a stream, entry id ``0-SEQ``, fields ``k``, ``m``
``P z:SID:ST``     stream: wake-up signals for readers (attach, detach, drop), id ``TOKEN-0``
``P e:SID:RID``    string: a server-to-client request awaits its answer (1) or got it (2)
``P a:SID:RID``    list: the client's answer
``P seen``/``P born``  sorted sets: session ids by last traffic / by creation time
``P workers``      sorted set: worker ids by last heartbeat
``P hs``           sorted set: session ids by creation, until their handshake timeout is checked
``P own:OWNER``    sorted set: the sessions of one client, for its quota
``P alive``        string: when a process last swept (the sweep skips the gaps between)
``P ws:WORKER``    set: ``"SID ST"`` of the running request streams a worker owns
``P tok``          counter of reader tokens

Channel ``P wake``: ``"SID ST"`` whenever stream ST of session SID changes for
its reader (an event appended while a reader is attached, an attach, a detach,
a drop, a deletion), for the stream readers of every process
(:mod:`~flask_mcp.backends._redis_reader`). Several such lines may come in one
message, separated by newlines.
"""

from __future__ import annotations

#: The arguments every script receives first, in this order.
HEAD = ("prefix", "idle", "lifetime", "grace", "worker", "buffer", "dead_after")

LIBRARY = r"""
local P, IDLE, LIFE, GRACE = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ME, BUF, DEAD = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local A = {}
for i = 8, #ARGV do A[#A + 1] = ARGV[i] end

local function key(kind, sid, st)
  if st then return P .. kind .. ':' .. sid .. ':' .. st end
  return P .. kind .. ':' .. sid
end
-- The answer the sweep writes for a request whose worker stopped: these two parts around its id.
local STOPPED_1 = '{"jsonrpc":"2.0","id":'
local STOPPED_2 = ',"error":{"code":-32603,"message":"The worker running this request stopped '
  .. 'before it answered; retry the request.","data":{"retryable":true}}}'
local function int(x) return string.format('%d', x) end
local function fmt(x) return string.format('%.6f', x) end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function exists(sid) return redis.call('EXISTS', key('s', sid)) == 1 end
local function has_stream(sid, st) return redis.call('HEXISTS', key('m', sid), 'n:' .. st) == 1 end

-- Seconds Redis keeps an idle session: its limits plus a grace the reaper uses first.
local function ttl(sid, now)
  local left = -1
  if IDLE > 0 then left = IDLE end
  if LIFE > 0 then
    local born = tonumber(redis.call('HGET', key('s', sid), 'created') or '') or now
    local l = born + LIFE - now
    if left < 0 or l < left then left = l end
  end
  if left < 0 then return 0 end
  return math.ceil(math.max(left, 0) + GRACE)
end
local function expire(k, secs) if secs > 0 then redis.call('EXPIRE', k, math.ceil(secs)) end end
local function keep_alive(sid, secs)
  for _, k in ipairs({key('s', sid), key('m', sid), key('o', sid)}) do expire(k, secs) end
  expire(key('x', sid, 'g'), secs)
  expire(key('z', sid, 'g'), secs)
end

local function token()
  local k = P .. 'tok'
  local v = redis.call('INCR', k)
  if v == 1 then  -- a lost counter restarts above every earlier token
    local t = redis.call('TIME')
    v = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('SET', k, int(v))
  end
  return int(v)
end
-- Wake the readers of a stream in every process (the channel is not a key: cluster-safe).
local function wake(sid, st) redis.call('PUBLISH', P .. 'wake', sid .. ' ' .. st) end
-- Wake the readers blocked on a stream; they re-check their token and the stream.
local function signal(sid, st, secs)
  wake(sid, st)
  local z, tok = key('z', sid, st), token()
  local r = redis.pcall('XADD', z, 'MAXLEN', '1', tok .. '-0', 't', '1')
  if type(r) == 'table' and r.err then
    redis.call('DEL', z)
    redis.call('XADD', z, 'MAXLEN', '1', tok .. '-0', 't', '1')
  end
  expire(z, secs)
  return tok
end

local function disown(sid, st)
  local m = key('m', sid)
  local owner = redis.call('HGET', m, 'w:' .. st)
  if owner then
    redis.call('SREM', P .. 'ws:' .. owner, sid .. ' ' .. st)
    redis.call('HDEL', m, 'w:' .. st, 'q:' .. st)
  end
end
local function forget_stream(sid, st)
  disown(sid, st)
  redis.call('HDEL', key('m', sid), 'n:' .. st, 'r:' .. st, 'c:' .. st)
  redis.call('DEL', key('x', sid, st))
end

-- Drop the oldest retained message of the session (and the control events before it).
local function evict_oldest(sid)
  local o = key('o', sid)
  local victim = redis.call('LPOP', o)
  if not victim then return end
  local x, start, done = key('x', sid, victim), '-', false
  while not done do
    local entries = redis.call('XRANGE', x, start, '+', 'COUNT', 32)
    if #entries == 0 then break end
    for _, e in ipairs(entries) do
      redis.call('XDEL', x, e[1])
      start = '(' .. e[1]
      if e[2][2] == 'message' then done = true break end
    end
  end
  local reader = redis.call('HGET', key('m', sid), 'r:' .. victim)
  if victim ~= 'g' and (not reader or reader == '0') and not redis.call('LPOS', o, victim) then
    forget_stream(sid, victim)
  end
end

local function append_event(sid, st, kind, msg, now)
  local m, x, o = key('m', sid), key('x', sid, st), key('o', sid)
  local seq = redis.call('HINCRBY', m, 'n:' .. st, 1)
  redis.call('XADD', x, '0-' .. int(seq), 'k', kind, 'm', msg)
  if redis.call('HEXISTS', m, 'r:' .. st) == 1 then wake(sid, st) end
  local secs = ttl(sid, now)
  expire(x, secs)
  if kind == 'message' then
    if redis.call('RPUSH', o, st) == 1 then expire(o, secs) end
    while redis.call('LLEN', o) > BUF do evict_oldest(sid) end
  elseif kind == 'end' then
    disown(sid, st)
  end
  return seq
end

local function delete_session(sid)
  local existed = exists(sid)
  local m = key('m', sid)
  for _, f in ipairs(redis.call('HKEYS', m)) do
    local kind, st = string.match(f, '^(%a):(.*)$')
    if kind == 'n' then
      disown(sid, st)
      redis.call('DEL', key('x', sid, st))
      signal(sid, st, 60)
    end
  end
  redis.call('DEL', key('s', sid), m, key('o', sid))
  redis.call('ZREM', P .. 'seen', sid)
  redis.call('ZREM', P .. 'born', sid)
  return existed
end

-- Record traffic on a session and change this worker's count of its running requests.
local function touch(sid, delta)
  local s = key('s', sid)
  if not exists(sid) then return false end
  local now = clock()
  redis.call('HSET', s, 'last_seen', fmt(now))
  if delta ~= 0 then
    local f = 'b:' .. ME
    if redis.call('HINCRBY', s, f, delta) <= 0 then redis.call('HDEL', s, f) end
    redis.call('ZADD', P .. 'workers', fmt(now), ME)
  end
  redis.call('ZADD', P .. 'seen', fmt(now), sid)
  keep_alive(sid, ttl(sid, now))
  return true
end

-- True if a live worker runs a request of the session; forgets the counts of dead workers.
local function busy(sid, now)
  local s, live = key('s', sid), false
  local h = redis.call('HGETALL', s)
  for i = 1, #h, 2 do
    if string.sub(h[i], 1, 2) == 'b:' then
      local beat = tonumber(redis.call('ZSCORE', P .. 'workers', string.sub(h[i], 3)) or '')
      if beat and beat >= now - DEAD then
        if tonumber(h[i + 1]) > 0 then live = true end
      else
        redis.call('HDEL', s, h[i])
      end
    end
  end
  return live
end

-- End the running request streams of workers whose heartbeat stopped, each with a
-- JSON-RPC error answering its request. Silence is measured only while Redis was
-- reachable: when no process reached Redis for DEAD / 2 seconds (an outage, a stall, or
-- every worker gone), that gap is taken off every worker's silence.
local function sweep(now)
  local ended = 0
  local alive, workers = P .. 'alive', P .. 'workers'
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
  local since = '(' .. fmt(now - DEAD)
  local dead = redis.call('ZRANGEBYSCORE', P .. 'workers', '-inf', since, 'LIMIT', 0, 10)
  for _, w in ipairs(dead) do
    redis.call('ZREM', P .. 'workers', w)
    for _, member in ipairs(redis.call('SMEMBERS', P .. 'ws:' .. w)) do
      local sid, st = string.match(member, '^(%S+) (%S+)$')
      if sid and exists(sid) and has_stream(sid, st) then
        local rid = redis.call('HGET', key('m', sid), 'q:' .. st)
        if rid then append_event(sid, st, 'message', STOPPED_1 .. rid .. STOPPED_2, now) end
        append_event(sid, st, 'end', '', now)
        ended = ended + 1
      end
      if sid then redis.call('HDEL', key('s', sid), 'b:' .. w) end
    end
    redis.call('DEL', P .. 'ws:' .. w)
  end
  return ended
end
"""

SCRIPTS: dict[str, str] = {
    "create": r"""
-- A: sid, limit, handshake timeout (0: none), owner ('' : none), quota (0: none), fields...
local sid, limit, hs_timeout = A[1], tonumber(A[2]), tonumber(A[3])
local owner, quota = A[4], tonumber(A[5])
local seen, pending, now = P .. 'seen', P .. 'hs', clock()
if hs_timeout > 0 then  -- end sessions whose handshake never finished (more when full)
  local batch = 10
  if redis.call('ZCARD', seen) >= limit then batch = 100 end
  local cut = '(' .. fmt(now - hs_timeout)
  for _, old in ipairs(redis.call('ZRANGEBYSCORE', pending, '-inf', cut, 'LIMIT', 0, batch)) do
    redis.call('ZREM', pending, old)
    if redis.call('HGET', key('s', old), 'initialized') ~= 'true' then delete_session(old) end
  end
end
if redis.call('ZCARD', seen) >= limit then
  for _, old in ipairs(redis.call('ZRANGE', seen, 0, 9)) do
    if not exists(old) then delete_session(old) end
  end
  if redis.call('ZCARD', seen) >= limit then return 0 end
end
local own = P .. 'own:' .. owner
if quota > 0 and owner ~= '' then
  for _, old in ipairs(redis.call('ZRANGE', own, 0, -1)) do
    if not exists(old) then redis.call('ZREM', own, old) end
  end
  if redis.call('ZCARD', own) >= quota then return 2 end
end
local fields = {}
for i = 6, #A do fields[#fields + 1] = A[i] end
redis.call('HSET', key('s', sid), 'created', fmt(now), 'last_seen', fmt(now), unpack(fields))
redis.call('HSET', key('m', sid), 'id', 0)
redis.call('ZADD', seen, fmt(now), sid)
redis.call('ZADD', P .. 'born', fmt(now), sid)
local secs = ttl(sid, now)
if hs_timeout > 0 then
  redis.call('ZADD', pending, fmt(now), sid)
  secs = math.ceil(hs_timeout + GRACE)  -- until a request touches it
end
keep_alive(sid, secs)
if quota > 0 and owner ~= '' then
  redis.call('ZADD', own, fmt(now), sid)
  expire(own, math.max(ttl(sid, now), secs))
end
return 1
""",
    "touch": r"""
if touch(A[1], tonumber(A[2])) then return 1 end
return 0
""",
    "load": r"""
if not touch(A[1], 0) then return {} end
return redis.call('HGETALL', key('s', A[1]))
""",
    "update": r"""
local sid = A[1]
local s = key('s', sid)
if not exists(sid) then return 0 end
for i = 2, #A, 2 do
  redis.call('HSET', s, A[i], A[i + 1])
  if A[i] == 'last_seen' then redis.call('ZADD', P .. 'seen', A[i + 1], sid) end
  if A[i] == 'created' then redis.call('ZADD', P .. 'born', A[i + 1], sid) end
end
return 1
""",
    "subscription": r"""
local sid, uri, add = A[1], A[2], A[3] == '1'
local s = key('s', sid)
if not exists(sid) then return 0 end
local list = cjson.decode(redis.call('HGET', s, 'subscriptions') or '[]')
local out, found = {}, false
for _, item in ipairs(list) do
  if item == uri then found = true end
  if item ~= uri or add then out[#out + 1] = item end
end
if add and not found then out[#out + 1] = uri end
if #out == 0 then redis.call('HSET', s, 'subscriptions', '[]')
else redis.call('HSET', s, 'subscriptions', cjson.encode(out)) end
return 1
""",
    "delete": r"""
if delete_session(A[1]) then return 1 end
return 0
""",
    "reap": r"""
local now, batch, out, done = clock(), tonumber(A[1]), {}, {}
sweep(now)
local function consider(sids, fallback)
  for _, sid in ipairs(sids) do
    if not done[sid] then
      done[sid] = true
      local reason = nil
      if not exists(sid) then
        reason = fallback
      elseif busy(sid, now) then
        redis.call('ZADD', P .. 'seen', fmt(now), sid)
        keep_alive(sid, math.max(IDLE, 0) + GRACE)
      else
        local h = redis.call('HMGET', key('s', sid), 'created', 'last_seen')
        if LIFE > 0 and now - tonumber(h[1]) > LIFE then reason = 'lifetime'
        elseif IDLE > 0 and now - tonumber(h[2]) > IDLE then reason = 'idle' end
      end
      if reason then
        delete_session(sid)
        out[#out + 1] = sid
        out[#out + 1] = reason
      end
    end
  end
end
local function older(index, limit)
  return redis.call('ZRANGEBYSCORE', P .. index, '-inf', '(' .. fmt(now - limit), 'LIMIT', 0, batch)
end
if LIFE > 0 then consider(older('born', LIFE), 'lifetime') end
if IDLE > 0 then consider(older('seen', IDLE), 'idle') end
return out
""",
    "beat": r"""
local now = clock()
redis.call('ZADD', P .. 'workers', fmt(now), ME)
return sweep(now)
""",
    "open": r"""
local sid, st = A[1], A[2]
if not exists(sid) then return 0 end
local m = key('m', sid)
if redis.call('HSETNX', m, 'n:' .. st, 0) == 1 and st ~= 'g' then
  redis.call('HSET', m, 'w:' .. st, ME)
  if A[3] and A[3] ~= '' then redis.call('HSET', m, 'q:' .. st, A[3]) end
  redis.call('SADD', P .. 'ws:' .. ME, sid .. ' ' .. st)
  redis.call('EXPIRE', P .. 'ws:' .. ME, 86400)
  redis.call('ZADD', P .. 'workers', fmt(clock()), ME)
end
return 1
""",
    "append": r"""
local sid, st, kind, msg = A[1], A[2], A[3], A[4]
if not exists(sid) then return 0 end
return append_event(sid, st, kind, msg, clock())
""",
    "attach": r"""
local sid, st = A[1], A[2]
if not exists(sid) then return token() end
local m = key('m', sid)
redis.call('HSETNX', m, 'n:' .. st, 0)
local tok = signal(sid, st, math.max(ttl(sid, clock()), 60))
redis.call('HSET', m, 'r:' .. st, tok)
return tok
""",
    "detach": r"""
local m = key('m', A[1])
if redis.call('HGET', m, 'r:' .. A[2]) == A[3] then
  redis.call('HDEL', m, 'r:' .. A[2])
  signal(A[1], A[2], 60)
end
return 1
""",
    "check": r"""
local sid, st, after, tok = A[1], A[2], tonumber(A[3]), A[4]
if not exists(sid) then return {'missing'} end
local m = key('m', sid)
local last = redis.call('HGET', m, 'n:' .. st)
if not last then return {'missing'} end
if redis.call('HGET', m, 'r:' .. st) ~= tok then return {'superseded'} end
if tonumber(last) <= after then return {'wait'} end
local out = {'events'}
for _, e in ipairs(redis.call('XRANGE', key('x', sid, st), '(0-' .. int(after), '+')) do
  out[#out + 1] = e[1]
  out[#out + 1] = e[2][2]
  out[#out + 1] = e[2][4]
end
return out
""",
    "first": r"""
local sid, st = A[1], A[2]
if not exists(sid) then return false end
local last = redis.call('HGET', key('m', sid), 'n:' .. st)
if not last then return false end
local e = redis.call('XRANGE', key('x', sid, st), '-', '+', 'COUNT', 1)
if #e > 0 then return tonumber(string.match(e[1][1], '%-(%d+)$')) end
return tonumber(last) + 1
""",
    "drop": r"""
local sid, st = A[1], A[2]
if not has_stream(sid, st) then return 0 end
redis.call('LREM', key('o', sid), 0, st)
forget_stream(sid, st)
signal(sid, st, 60)
return 1
""",
    "cursor": r"""
local m, st, seq = key('m', A[1]), A[2], tonumber(A[3])
if redis.call('HEXISTS', m, 'n:' .. st) == 0 then return 0 end
if (tonumber(redis.call('HGET', m, 'c:' .. st) or '0') or 0) < seq then
  redis.call('HSET', m, 'c:' .. st, int(seq))
end
return 1
""",
    "next_id": r"""
if not exists(A[1]) then return 0 end
return redis.call('HINCRBY', key('m', A[1]), 'id', 1)
""",
    "expect": r"""
local e, a = key('e', A[1], A[2]), key('a', A[1], A[2])
if not exists(A[1]) then return 0 end
redis.call('SET', e, '1', 'EX', 86400)
redis.call('DEL', a)
return 1
""",
    "poll": r"""
local e, a = key('e', A[1], A[2]), key('a', A[1], A[2])
if not redis.call('GET', e) then return {'none'} end
local msg = redis.call('LPOP', a)
if msg then
  redis.call('DEL', e)
  return {'ok', msg}
end
return {'wait'}
""",
    "deliver": r"""
local e, a = key('e', A[1], A[2]), key('a', A[1], A[2])
if redis.call('GET', e) ~= '1' then return 0 end
redis.call('SET', e, '2', 'KEEPTTL')
redis.call('RPUSH', a, A[3])
redis.call('EXPIRE', a, 86400)
return 1
""",
}
