local st, after, tok = A[1], tonumber(A[2]), A[3]
if not exists() then return {'missing'} end
local last = redis.call('HGET', M, 'n:' .. st)
if not last then return {'missing'} end
if redis.call('HGET', M, 'r:' .. st) ~= tok then return {'superseded'} end
if tonumber(last) <= after then return {'wait'} end
local out = {'events'}
for _, e in ipairs(redis.call('XRANGE', X, '(0-' .. int(after), '+')) do
  out[#out + 1] = e[1]
  out[#out + 1] = e[2][2]
  out[#out + 1] = e[2][4]
end
return out
