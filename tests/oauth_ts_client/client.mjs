// The official TypeScript SDK client's OAuth support against Flask-MCP's built-in
// authorization server (tests/test_e2e_oauth_server.py drives it).
//
//   node client.mjs MCP_URL REDIRECT_URL
//
// Each time the SDK sends the user to the authorization URL, this prints
// {"authorize": URL} on a line and reads the authorization code from the next line of
// stdin (the test logs in and consents in Chromium, and its callback server gets the
// code). At the end it prints {"result": {...}}: what the tools answered and the tokens.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { auth, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [mcpUrl, redirectUrl] = process.argv.slice(2);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

class MemoryProvider {
  constructor() {
    this.saved = {};
    this.lastUrl = undefined;
  }
  get redirectUrl() { return redirectUrl; }
  get clientMetadata() {
    return {
      client_name: "TypeScript test client",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(info) { this.saved.client = info; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; }
  redirectToAuthorization(url) { this.lastUrl = url; }
  saveCodeVerifier(verifier) { this.saved.verifier = verifier; }
  codeVerifier() { return this.saved.verifier; }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") delete this.saved.tokens;
    if (scope === "all" || scope === "client") delete this.saved.client;
  }
}

const provider = new MemoryProvider();

async function askForCode() {
  console.log(JSON.stringify({ authorize: String(provider.lastUrl) }));
  const { value, done } = await lines.next();
  if (done) throw new Error("stdin closed before an authorization code came");
  return value.trim();
}

async function connect() {
  for (let round = 0; round < 3; round++) {
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    const client = new Client({ name: "oauth-ts-test", version: "1.0.0" });
    try {
      await client.connect(transport);
      return { client, transport };
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) throw error;
      await transport.finishAuth(await askForCode());
    }
  }
  throw new Error("could not connect after three authorizations");
}

async function call(session, name, args) {
  for (let round = 0; round < 3; round++) {
    try {
      return await session.client.callTool({ name, arguments: args });
    } catch (error) {
      console.error(`${name}: ${error}`);
      if (error instanceof UnauthorizedError) {
        await session.transport.finishAuth(await askForCode());
        continue;
      }
      if (String(error).includes("403")) {
        // insufficient_scope: this SDK version only refreshes, which cannot widen the
        // scope, so authorize again for what was granted plus what the 403 asked for
        // (the scope the transport read from its WWW-Authenticate header)
        const granted = (provider.saved.tokens?.scope ?? "").split(" ");
        const asked = (session.transport._scope ?? "").split(" ");
        const scope = [...new Set([...granted, ...asked])].filter(Boolean).join(" ");
        provider.invalidateCredentials("tokens");
        const outcome = await auth(provider, { serverUrl: new URL(mcpUrl), scope });
        if (outcome === "REDIRECT") await session.transport.finishAuth(await askForCode());
        continue;
      }
      throw error;
    }
  }
  throw new Error(`${name} still refused after three authorizations`);
}

const text = (result) => result.content.map((block) => block.text ?? "").join("");
const session = await connect();
const result = { clientId: provider.saved.client.client_id };
result.whoami = (await call(session, "whoami", {})).structuredContent;
result.notes = text(await call(session, "list_notes", {}));
const first = provider.saved.tokens;
result.refresh = await auth(provider, { serverUrl: new URL(mcpUrl) });
const second = provider.saved.tokens;
result.rotated = second.access_token !== first.access_token && second.refresh_token !== first.refresh_token;
result.afterRefresh = (await call(session, "whoami", {})).structuredContent;
result.add = text(await call(session, "add_note", { text: "from TypeScript" }));
result.tokens = provider.saved.tokens;
console.log(JSON.stringify({ result }));
await session.client.close();
process.exit(0);
