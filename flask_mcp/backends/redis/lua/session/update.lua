if not exists() then return 0 end
for i = 1, #A, 2 do redis.call('HSET', S, A[i], A[i + 1]) end
changed()
return 1
