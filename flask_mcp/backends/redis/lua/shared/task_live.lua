-- KEYS: the live task index (a sorted set by creation time). A: the id the previous batch
-- ended with ('' from the start), its score, how many ids. Returns the next ids after it,
-- with their scores: past its rank while it is in the index, else past its score (ids
-- that share it are read again), so that a batch ending on an id that ended meanwhile
-- still moves on. Rank and read in one step: ids removed meanwhile shift nothing.
local LIVE = KEYS[1]
local last, score, count = A[1], A[2], tonumber(A[3])
local start = 0
if last ~= '' then
  local rank = redis.call('ZRANK', LIVE, last)
  if rank then start = rank + 1 else start = redis.call('ZCOUNT', LIVE, '-inf', '(' .. score) end
end
return redis.call('ZRANGE', LIVE, start, start + count - 1, 'WITHSCORES')
