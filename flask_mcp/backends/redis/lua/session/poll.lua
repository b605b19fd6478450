if not redis.call('GET', X) then return {'none'} end
local msg = redis.call('LPOP', Z)
if msg then
  redis.call('DEL', X)
  return {'ok', msg}
end
return {'wait'}
