-- wrk script: MCP tools/call requests, each with a unique JSON-RPC id, and a
-- check of every response body.
--
-- Configured through environment variables (set by benchmarks/wrk.py):
--   BENCH_PATH          endpoint path (default /mcp)
--   BENCH_SESSIONS      comma-separated Mcp-Session-Id values, used round-robin
--                       (empty: no session header, for stateless servers)
--   BENCH_ERA           "handshake" (default) or "2026": the per-request form of
--                       2026-07-28 (MCP-Protocol-Version, Mcp-Method, Mcp-Name
--                       headers and io.modelcontextprotocol/* keys in _meta)
--   BENCH_VERSION       MCP-Protocol-Version header of handshake requests
--   BENCH_TOOL          tool name (default add)
--   BENCH_ARGS          JSON object of arguments
--   BENCH_PROGRESS      "1": send a progressToken in params._meta
--   BENCH_EXPECT        substrings every good body contains, separated by \031
--   BENCH_COUNT_PATTERN a substring that must occur exactly BENCH_COUNT_N times
--   BENCH_MIN_BYTES     smallest good body
--   BENCH_STATUS        expected HTTP status (default 200)
--   BENCH_AUTHORIZATION Authorization header of every request (the JWT benchmark)
-- done() prints one "BENCHJSON {...}" line, and "BENCHFIRSTBAD ..." with the
-- first bad response when there was one.

local getenv = os.getenv
local path = getenv("BENCH_PATH") or "/mcp"
local era = getenv("BENCH_ERA") or "handshake"
local version = getenv("BENCH_VERSION") or "2025-11-25"
local tool = getenv("BENCH_TOOL") or "add"
local args_json = getenv("BENCH_ARGS") or '{"a":1,"b":2}'
local progress = getenv("BENCH_PROGRESS") == "1"
local count_pattern = getenv("BENCH_COUNT_PATTERN")
local count_n = tonumber(getenv("BENCH_COUNT_N") or "0")
local min_bytes = tonumber(getenv("BENCH_MIN_BYTES") or "0")
local want_status = tonumber(getenv("BENCH_STATUS") or "200")

local session_ids = {}
for sid in string.gmatch(getenv("BENCH_SESSIONS") or "", "[^,]+") do
  session_ids[#session_ids + 1] = sid
end
if #session_ids == 0 then session_ids[1] = "" end

local expect = {}
for part in string.gmatch(getenv("BENCH_EXPECT") or '"result"', "[^\031]+") do
  expect[#expect + 1] = part
end

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
  id_base = (thread_index or 1) * 1000000000
  for i, sid in ipairs(session_ids) do
    local h = {
      ["Content-Type"] = "application/json",
      ["Accept"] = "application/json, text/event-stream",
    }
    if sid ~= "" then h["Mcp-Session-Id"] = sid end
    local authorization = getenv("BENCH_AUTHORIZATION")
    if authorization and authorization ~= "" then h["Authorization"] = authorization end
    if era == "2026" then
      h["MCP-Protocol-Version"] = "2026-07-28"
      h["Mcp-Method"] = "tools/call"
      h["Mcp-Name"] = tool
    else
      h["MCP-Protocol-Version"] = version
    end
    header_sets[i] = h
  end
end

function request()
  sent = sent + 1
  local id = id_base + sent
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
    .. tool .. '","arguments":' .. args_json .. meta .. "}}"
  return wrk.format("POST", path, header_sets[(sent % #header_sets) + 1], body)
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

function response(status, headers, body)
  responses = responses + 1
  local good = status == want_status
  if not good then
    bad_status = bad_status + 1
  else
    body = body or ""
    if #body < min_bytes then good = false end
    if good then
      for _, part in ipairs(expect) do
        if not string.find(body, part, 1, true) then good = false; break end
      end
    end
    if good and string.find(body, '"isError":true', 1, true) then good = false end
    if good and count_pattern and count_n > 0 and occurrences(body, count_pattern) ~= count_n then
      good = false
    end
    if not good then bad_body = bad_body + 1 end
  end
  if not good and first_bad == nil then
    first_bad = status .. " " .. string.sub(body or "", 1, 400)
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
      .. '"lat_p50_us":%d,"lat_p90_us":%d,"lat_p99_us":%d,"lat_max_us":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, resp, bstatus, bbody, latency.mean,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
  if fb ~= nil then
    io.write("BENCHFIRSTBAD " .. string.gsub(fb, "\n", "\\n") .. "\n")
  end
end
