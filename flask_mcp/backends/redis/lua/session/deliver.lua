if redis.call('GET', X) ~= '1' then return 0 end
redis.call('SET', X, '2', 'KEEPTTL')
redis.call('RPUSH', Z, A[1])
redis.call('EXPIRE', Z, 86400)
return 1
