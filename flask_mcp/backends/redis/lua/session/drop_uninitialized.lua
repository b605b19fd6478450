if exists() and redis.call('HGET', S, 'initialized') == 'true' then return {0} end
local out = delete_session()
table.insert(out, 1, 1)
return out
