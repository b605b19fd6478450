-- wrk script: a mix of MCP tools/call requests (the realistic card), each
-- response checked against the expectations of the tool it answers.
--
-- Configured through environment variables (set by benchmarks/wrk.py):
--   BENCH_PATH          endpoint path (default /mcp)
--   BENCH_SESSIONS      comma-separated Mcp-Session-Id values, used round-robin
--                       (empty: no session header, for stateless servers)
--   BENCH_ERA           "handshake" (default) or "2026" (per-request form)
--   BENCH_CALLS         the calls, separated by \030; each is
--                       name \031 arguments-JSON \031 pattern \029 pattern ...
--                       (Lua patterns every correct body matches; "{USER}" in the
--                       arguments becomes user-00001 .. user-000NN, one per request)
--   BENCH_USERS         how many users "{USER}" cycles through (default 50)
--   BENCH_PROGRESS      "1": send a progressToken in params._meta
--   BENCH_COUNT_PATTERN a plain substring that must occur exactly BENCH_COUNT_N times
--   BENCH_MIN_BYTES     smallest good body
--
-- Request i calls tool i mod #calls with JSON-RPC id i (plus a per-thread base
-- that is a multiple of #calls), so a response names its tool by its id.
-- done() prints one "BENCHJSON {...}" line (p95 included), and
-- "BENCHFIRSTBAD ..." with the first bad response when there was one.

local getenv = os.getenv
local path = getenv("BENCH_PATH") or "/mcp"
local era = getenv("BENCH_ERA") or "handshake"
local progress = getenv("BENCH_PROGRESS") == "1"
local users = tonumber(getenv("BENCH_USERS") or "50")
local count_pattern = getenv("BENCH_COUNT_PATTERN")
local count_n = tonumber(getenv("BENCH_COUNT_N") or "0")
local min_bytes = tonumber(getenv("BENCH_MIN_BYTES") or "0")

local calls = {}
for spec in string.gmatch(getenv("BENCH_CALLS") or "", "[^\030]+") do
  local fields = {}
  for field in string.gmatch(spec, "[^\031]+") do fields[#fields + 1] = field end
  local patterns = {}
  for p in string.gmatch(fields[3] or "", "[^\029]+") do patterns[#patterns + 1] = p end
  calls[#calls + 1] = { name = fields[1], args = fields[2] or "{}", patterns = patterns }
end
local ncalls = #calls

local session_ids = {}
for sid in string.gmatch(getenv("BENCH_SESSIONS") or "", "[^,]+") do
  session_ids[#session_ids + 1] = sid
end
if #session_ids == 0 then session_ids[1] = "" end

local threads = {}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_index", thread_count)
  threads[#threads + 1] = thread
end

local header_sets = {}
local sent = 0
local id_base = 0
responses = 0
bad_status = 0
bad_body = 0
first_bad = nil

function init(args)
  id_base = (thread_index or 1) * 1000000000 * ncalls
  for i, sid in ipairs(session_ids) do
    for c, call in ipairs(calls) do
      local h = {
        ["Content-Type"] = "application/json",
        ["Accept"] = "application/json, text/event-stream",
      }
      if sid ~= "" then h["Mcp-Session-Id"] = sid end
      if era == "2026" then
        h["MCP-Protocol-Version"] = "2026-07-28"
        h["Mcp-Method"] = "tools/call"
        h["Mcp-Name"] = call.name
      else
        h["MCP-Protocol-Version"] = "2025-11-25"
      end
      header_sets[(i - 1) * ncalls + c] = h
    end
  end
end

function request()
  sent = sent + 1
  local id = id_base + sent
  local c = (id % ncalls) + 1
  local call = calls[c]
  local user = string.format("user-%05d", (math.floor(id / ncalls) % users) + 1)
  local args = string.gsub(call.args, "{USER}", user)
  local meta = ""
  if era == "2026" then
    meta = ',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
      .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1.0"},'
      .. '"io.modelcontextprotocol/clientCapabilities":{}'
      .. (progress and (',"progressToken":' .. id) or "") .. "}"
  elseif progress then
    meta = ',"_meta":{"progressToken":' .. id .. "}"
  end
  local body = '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":{"name":"'
    .. call.name .. '","arguments":' .. args .. meta .. "}}"
  local session = (sent % #session_ids)
  return wrk.format("POST", path, header_sets[session * ncalls + c], body)
end

local function occurrences(text, pattern)
  local n, start = 0, 1
  while true do
    local s, e = string.find(text, pattern, start, true)
    if s == nil then return n end
    n = n + 1
    start = e + 1
  end
end

local function check(body)
  if #body < min_bytes then return false end
  local rid = string.match(body, '"id":%s*(%d+)%s*,%s*"result"')
    or string.match(body, '"result".*"id":%s*(%d+)%s*}%s*$')
  if rid == nil then return false end
  local call = calls[(tonumber(rid) % ncalls) + 1]
  for _, p in ipairs(call.patterns) do
    if not string.find(body, p) then return false end
  end
  -- isError ends a result: look at the tail only (a 4 MB body is not scanned twice)
  local tail = #body > 4096 and string.sub(body, -4096) or body
  if string.find(tail, '"isError":%s*true') then return false end
  if count_pattern and count_n > 0 and occurrences(body, count_pattern) ~= count_n then
    return false
  end
  return true
end

function response(status, headers, body)
  responses = responses + 1
  body = body or ""
  local good = status == 200
  if not good then
    bad_status = bad_status + 1
  elseif not check(body) then
    good = false
    bad_body = bad_body + 1
  end
  if not good and first_bad == nil then
    first_bad = status .. " " .. string.sub(body, 1, 400)
  end
end

function done(summary, latency, requests)
  local resp, bstatus, bbody, fb = 0, 0, 0, nil
  for _, thread in ipairs(threads) do
    resp = resp + (thread:get("responses") or 0)
    bstatus = bstatus + (thread:get("bad_status") or 0)
    bbody = bbody + (thread:get("bad_body") or 0)
    if fb == nil then fb = thread:get("first_bad") end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,'
      .. '"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d,'
      .. '"responses":%d,"bad_status":%d,"bad_body":%d,"lat_mean_us":%.1f,'
      .. '"lat_p50_us":%d,"lat_p90_us":%d,"lat_p95_us":%d,"lat_p99_us":%d,"lat_max_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, resp, bstatus, bbody, latency.mean,
    latency:percentile(50), latency:percentile(90), latency:percentile(95),
    latency:percentile(99), latency.max))
  if fb ~= nil then
    io.write("BENCHFIRSTBAD " .. string.gsub(fb, "\n", "\\n") .. "\n")
  end
end
