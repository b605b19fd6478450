-- KEYS[6], KEYS[7]: the request's marker and answer list.
if not exists() then return 0 end
redis.call('SET', X, '1', 'EX', 86400)
redis.call('DEL', Z)
return 1
