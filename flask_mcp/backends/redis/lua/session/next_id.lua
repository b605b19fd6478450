if not exists() then return 0 end
return redis.call('HINCRBY', M, 'id', 1)
