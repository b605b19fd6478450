local existed = 0
if exists() then existed = 1 end
local out = delete_session()
table.insert(out, 1, existed)
return out
