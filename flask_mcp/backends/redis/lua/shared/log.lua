-- KEYS: a shared log (a list), the ids of its last appends (' id=position...'). A: the
-- item, the append's id, the seconds both are kept. Returns the item's position, counted
-- from 1. An append sent again with its id (redis-py resending a command whose reply the
-- connection lost) is found among the last 16 and returns its first position, appending
-- nothing.
local LOG, IDS = KEYS[1], KEYS[2]
local item, wid, secs = A[1], A[2], tonumber(A[3])
local ids = redis.call('GET', IDS) or ''
local at = string.find(ids, ' ' .. wid .. '=', 1, true)
if at then return tonumber(string.match(ids, '^%d+', at + #wid + 2)) end
local n = redis.call('RPUSH', LOG, item)
ids = ids .. ' ' .. wid .. '=' .. int(n)
local _, count = string.gsub(ids, ' ', ' ')
while count > 16 do
  ids = string.sub(ids, string.find(ids, ' ', 2, true))
  count = count - 1
end
redis.call('SET', IDS, ids, 'EX', secs)
expire(LOG, secs)
return n
