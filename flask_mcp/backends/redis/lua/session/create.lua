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
