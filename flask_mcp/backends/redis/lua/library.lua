-- Every script starts with this: the seven arguments of HEAD, its own as A[1], A[2]...
local IDLE, LIFE, GRACE = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local ME, BUF, DEAD, BYTES = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local A = {}
for i = 8, #ARGV do A[#A + 1] = ARGV[i] end
local function int(x) return string.format('%d', x) end
local function fmt(x) return string.format('%.6f', x) end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function millis()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function expire(k, secs) if secs > 0 then redis.call('EXPIRE', k, math.ceil(secs)) end end
