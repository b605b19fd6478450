-- KEYS[6], KEYS[7]: the request's marker and answer list. Returns {'none'} when no answer
-- is expected (forgotten, or taken over a minute ago), {'ok', answer} once the client's
-- came, else {'wait'}. A taken answer stays a minute, so that a poll sent again (its reply
-- lost) takes it still; deliver refuses a second answer meanwhile.
if not redis.call('GET', X) then return {'none'} end
local msg = redis.call('LINDEX', Z, 0)
if not msg then return {'wait'} end
redis.call('EXPIRE', X, 60)
redis.call('EXPIRE', Z, 60)
return {'ok', msg}
