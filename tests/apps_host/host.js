// A web host for MCP Apps (SEP-1865, io.modelcontextprotocol/ui, stable 2026-01-26), built
// on the official host bridge (AppBridge and PostMessageTransport of
// @modelcontextprotocol/ext-apps) and the official TypeScript SDK client. esbuild bundles it
// into dist/host.js at test time (build.mjs); index.html loads it.
//
// What it does, as the spec's "Lifecycle" section lays out for a web host:
//   1. connects to the MCP server (?server=URL) over Streamable HTTP, declaring the
//      extension with the mime type it renders;
//   2. lists the tools and shows the model's tool list (tools whose _meta.ui.visibility
//      leaves out "model" are not in it);
//   3. calls ?tool= with ?args= and, in parallel, reads the tool's _meta.ui.resourceUri
//      with resources/read (content item _meta.ui first, the resources/list entry as the
//      fallback);
//   4. renders the view through a sandbox proxy on another origin (?sandbox=ORIGIN):
//      the proxy page is served with the CSP built from _meta.ui.csp, and loads the view
//      into an inner sandboxed iframe;
//   5. answers ui/initialize with host context, sends tool input then tool result, proxies
//      the view's tools/call to the server (refusing tools whose visibility leaves out
//      "app"), follows size changes, records logs;
//   6. tears the view down with ui/resource-teardown (window.mcpHost.teardown()).
//
// Everything it sees is recorded in window.mcpHost.state for the test to read.

import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  buildAllowAttribute,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const EXTENSION_ID = "io.modelcontextprotocol/ui";
const HOST_INFO = { name: "flask-mcp-test-host", version: "1.0.0" };
const WAIT_MS = 30000;

const state = {
  phase: "starting",
  serverCapabilities: null,
  modelTools: [],
  resource: null,
  sandboxUrl: null,
  appInfo: null,
  appCapabilities: null,
  toolResult: null,
  calls: [],
  refused: [],
  sizes: [],
  logs: [],
  messages: [],
  teardown: null,
  errors: [],
};

const params = new URLSearchParams(location.search);
const logElement = document.getElementById("host-log");

function record(line) {
  const item = document.createElement("li");
  item.textContent = line;
  logElement.append(item);
}

function setPhase(phase) {
  state.phase = phase;
  document.getElementById("host-phase").textContent = phase;
}

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function visibility(tool) {
  return tool?._meta?.ui?.visibility ?? ["model", "app"];
}

// The UI metadata of a resource: the content item's _meta.ui, else the list entry's.
function uiMeta(content, listEntry) {
  return content?._meta?.ui ?? listEntry?._meta?.ui ?? {};
}

async function readView(client, uri) {
  const read = await client.readResource({ uri });
  if (read.contents.length !== 1) {
    throw new Error(`${uri}: expected one content item, got ${read.contents.length}`);
  }
  const content = read.contents[0];
  if (content.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`${uri}: mime type ${content.mimeType}, not ${RESOURCE_MIME_TYPE}`);
  }
  const html =
    "blob" in content
      ? new TextDecoder().decode(Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0)))
      : content.text;
  let listEntry;
  if (content?._meta?.ui === undefined) {
    const listed = await client.listResources();
    listEntry = listed.resources.find((resource) => resource.uri === uri);
  }
  const ui = uiMeta(content, listEntry);
  return { uri, html, ui, contentMeta: content._meta ?? null };
}

// Load the sandbox proxy (another origin) with the view's CSP and wait until it is ready.
function loadSandbox(iframe, ui) {
  const url = new URL("/sandbox.html", params.get("sandbox"));
  // Without _meta.ui.csp the sandbox applies the spec's restrictive default.
  if (ui.csp !== undefined) url.searchParams.set("csp", JSON.stringify(ui.csp));
  state.sandboxUrl = url.href;
  // The spec requires allow-scripts and allow-same-origin; allow-forms lets the view's
  // sandbox (a child of this one, which cannot have more) keep forms, as the reference host does.
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  const allow = buildAllowAttribute(ui.permissions);
  if (allow) iframe.setAttribute("allow", allow);
  const ready = new Promise((resolve) => {
    const listener = (event) => {
      if (
        event.source === iframe.contentWindow &&
        event.data?.method === "ui/notifications/sandbox-proxy-ready"
      ) {
        window.removeEventListener("message", listener);
        resolve();
      }
    };
    window.addEventListener("message", listener);
  });
  iframe.src = url.href;
  return withTimeout(ready, "the sandbox proxy");
}

function hostContext(tool) {
  return {
    toolInfo: { tool },
    theme: "light",
    displayMode: "inline",
    availableDisplayModes: ["inline"],
    containerDimensions: { width: 520, maxHeight: 900 },
    locale: "en-US",
    timeZone: "UTC",
    userAgent: HOST_INFO.name,
    platform: "web",
    deviceCapabilities: { touch: false, hover: true },
    styles: {
      variables: {
        "--color-background-primary": "light-dark(#ffffff, #171717)",
        "--color-text-primary": "light-dark(#171717, #fafafa)",
        "--font-sans": "system-ui, sans-serif",
      },
    },
  };
}

function newBridge(client, iframe, tool, ui, tools) {
  const caps = client.getServerCapabilities();
  const bridge = new AppBridge(
    client,
    HOST_INFO,
    {
      openLinks: {},
      serverTools: caps?.tools,
      serverResources: caps?.resources,
      logging: {},
      message: { text: {} },
      sandbox: { csp: ui.csp ?? {}, permissions: ui.permissions ?? {} },
    },
    { hostContext: hostContext(tool) },
  );
  bridge.onsizechange = ({ width, height }) => {
    state.sizes.push({ width, height });
    if (height !== undefined) iframe.style.height = `${height}px`;
    if (width !== undefined) iframe.style.minWidth = `min(${width}px, 100%)`;
  };
  bridge.onloggingmessage = (log) => {
    state.logs.push(log);
    record(`log ${log.level}: ${JSON.stringify(log.data)}`);
  };
  bridge.onmessage = async (message) => {
    state.messages.push(message);
    record(`message: ${JSON.stringify(message.content)}`);
    return {};
  };
  bridge.onopenlink = async ({ url }) => {
    record(`open link refused: ${url}`);
    throw new Error("Link opening denied by this test host");
  };
  return bridge;
}

// After connect(): AppBridge forwards tools/call to the server as is. A host MUST refuse a
// view's call to a tool whose visibility leaves out "app", and calls to other servers' tools.
function guardToolCalls(bridge, client, tools) {
  const forward = bridge.oncalltool;
  bridge.oncalltool = async (callParams, extra) => {
    const tool = tools.get(callParams.name);
    if (tool === undefined || !visibility(tool).includes("app")) {
      state.refused.push(callParams.name);
      record(`refused tools/call ${callParams.name}: not callable by apps`);
      throw new Error(`Tool ${callParams.name} is not callable by apps on this server`);
    }
    record(`view -> tools/call ${callParams.name} ${JSON.stringify(callParams.arguments ?? {})}`);
    const result = await forward(callParams, extra);
    state.calls.push({ name: callParams.name, arguments: callParams.arguments, result });
    return result;
  };
}

async function main() {
  const server = params.get("server");
  const toolName = params.get("tool");
  const args = JSON.parse(params.get("args") ?? "{}");

  setPhase("connecting");
  const client = new Client(HOST_INFO, {
    capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await withTimeout(client.connect(new StreamableHTTPClientTransport(new URL(server))), "connect");
  state.serverCapabilities = client.getServerCapabilities() ?? null;

  const listed = await client.listTools();
  const tools = new Map(listed.tools.map((tool) => [tool.name, tool]));
  state.modelTools = listed.tools.filter((tool) => visibility(tool).includes("model")).map((tool) => tool.name);
  document.getElementById("model-tools").textContent = state.modelTools.join(", ");

  const tool = tools.get(toolName);
  if (tool === undefined) throw new Error(`the server has no tool ${toolName}`);
  if (!visibility(tool).includes("model")) throw new Error(`${toolName} is not visible to the model`);
  const uri = getToolUiResourceUri(tool);
  if (uri === undefined) throw new Error(`${toolName} has no _meta.ui.resourceUri`);

  setPhase("calling");
  record(`model -> tools/call ${toolName} ${JSON.stringify(args)}`);
  const resultPromise = client.callTool({ name: toolName, arguments: args });
  const view = await readView(client, uri);
  state.resource = { uri, ui: view.ui, contentMeta: view.contentMeta, length: view.html.length };
  record(`resources/read ${uri}: ${view.html.length} characters, _meta.ui ${JSON.stringify(view.ui)}`);

  setPhase("sandboxing");
  const iframe = document.createElement("iframe");
  iframe.id = "view-frame";
  iframe.title = uri;
  if (view.ui.prefersBorder === true) iframe.classList.add("bordered");
  document.getElementById("view-slot").append(iframe);
  await loadSandbox(iframe, view.ui);

  const bridge = newBridge(client, iframe, tool, view.ui, tools);
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = () => resolve();
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  guardToolCalls(bridge, client, tools);
  window.mcpHost.bridge = bridge;

  setPhase("loading view");
  await bridge.sendSandboxResourceReady({ html: view.html, csp: view.ui.csp, permissions: view.ui.permissions });
  await withTimeout(initialized, "ui/notifications/initialized");
  state.appInfo = bridge.getAppVersion() ?? null;
  state.appCapabilities = bridge.getAppCapabilities() ?? null;
  record(`view initialized: ${JSON.stringify(state.appInfo)}`);

  await bridge.sendToolInput({ arguments: args });
  try {
    const result = await withTimeout(resultPromise, `the result of ${toolName}`);
    state.toolResult = result;
    await bridge.sendToolResult(result);
    record(`tool result sent to the view`);
  } catch (error) {
    await bridge.sendToolCancelled({ reason: String(error?.message ?? error) });
    throw error;
  }
  setPhase("interactive");
}

async function teardown(reason = "the test host is closing the view") {
  const bridge = window.mcpHost.bridge;
  const answer = await withTimeout(bridge.teardownResource({ reason }), "ui/resource-teardown");
  state.teardown = { answer };
  record(`view answered teardown: ${JSON.stringify(answer)}`);
  await bridge.close();
  document.getElementById("view-frame").remove();
  setPhase("closed");
  return answer;
}

window.mcpHost = { state, teardown, bridge: null };
main().catch((error) => {
  state.errors.push(String(error?.stack ?? error));
  record(`error: ${error?.message ?? error}`);
  setPhase("failed");
});
