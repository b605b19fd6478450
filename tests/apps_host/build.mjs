// Bundle the test host and the App SDK view with esbuild (both pinned in package.json):
//   dist/host.js      the host page's script (ES module): AppBridge + the TypeScript SDK client
//   dist/view-sdk.js  a view written on the official App SDK (IIFE), inlined into its HTML
// Run by tests/mcp_apps_host.py after `npm ci`; by hand: `npm ci && node build.mjs`.
import * as esbuild from "esbuild";

const common = { bundle: true, platform: "browser", target: "chrome120", logLevel: "warning" };
await esbuild.build({ ...common, entryPoints: ["host.js"], format: "esm", outfile: "dist/host.js" });
await esbuild.build({ ...common, entryPoints: ["view-sdk.js"], format: "iife", outfile: "dist/view-sdk.js" });
