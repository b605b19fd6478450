// Concurrent progress-reporting calls through the official TypeScript SDK client.
//
//   node busy.mjs URL CLIENTS CALLS [SECONDS]
//
// CLIENTS clients connect at once, and each makes CALLS concurrent `chatty` calls
// ({"seconds": SECONDS}, 1 by default) with an onprogress handler (so each call asks for
// progress). Every call's outcome is counted: a result whose text starts with "chatted on"
// is ok; an error result or a thrown error is a failure, kept with its message. Prints one
// JSON object: {"calls", "ok", "failed", "errors", "progress"}; the caller decides what
// passes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, clients, calls] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const seconds = Number(process.argv[5] ?? 1);
const report = { calls: 0, ok: 0, failed: 0, errors: [], progress: 0 };

async function one(client) {
  report.calls += 1;
  try {
    const result = await client.callTool(
      { name: "chatty", arguments: { seconds } },
      undefined,
      { onprogress: () => { report.progress += 1; }, timeout: 60000 },
    );
    const text = result.content?.[0]?.text ?? "";
    if (result.isError || !text.startsWith("chatted on")) {
      report.failed += 1;
      report.errors.push(text || JSON.stringify(result));
    } else {
      report.ok += 1;
    }
  } catch (error) {
    report.failed += 1;
    report.errors.push(String(error?.message ?? error));
  }
}

async function session() {
  const client = new Client({ name: "flask-mcp-busy-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  try {
    await Promise.all(Array.from({ length: calls }, () => one(client)));
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

await Promise.all(Array.from({ length: clients }, () => session()));
console.log(JSON.stringify(report));
