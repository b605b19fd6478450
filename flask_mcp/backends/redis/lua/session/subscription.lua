local uri, add, limit = A[1], A[2] == '1', tonumber(A[3])
if not exists() then return 0 end
local list = cjson.decode(redis.call('HGET', S, 'subscriptions') or '[]')
local out, found = {}, false
for _, item in ipairs(list) do
  if item == uri then found = true end
  if item ~= uri or add then out[#out + 1] = item end
end
if add and not found then
  if limit > 0 and #out >= limit then return -1 end
  out[#out + 1] = uri
end
if #out == 0 then redis.call('HSET', S, 'subscriptions', '[]')
else redis.call('HSET', S, 'subscriptions', cjson.encode(out)) end
changed()
return 1
