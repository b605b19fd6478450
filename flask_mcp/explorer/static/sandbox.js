// The sandbox proxy of MCP Apps (SEP-1865, 2026-01-26, "Sandbox proxy"). The explorer page
// (the host) frames this page on another origin: an opaque one (sandbox without
// allow-same-origin) or MCP_EXPLORER_SANDBOX_ORIGIN. It tells the host it is ready, loads the
// view's HTML into an inner sandboxed iframe when the host sends it (the inner document
// inherits this page's Content-Security-Policy, built by the server from the view's
// _meta.ui.csp), and relays every other message between the host and the view.
"use strict";

(function () {
  var PROXY_READY = "ui/notifications/sandbox-proxy-ready";
  var RESOURCE_READY = "ui/notifications/sandbox-resource-ready";
  // The view gets an opaque origin of its own: it cannot reach this document.
  var VIEW_SANDBOX = "allow-scripts allow-forms";

  if (window.self === window.top) throw new Error("the sandbox proxy only runs inside the explorer");
  if (!document.referrer) throw new Error("no referrer: cannot tell which page embeds the sandbox");
  var hostOrigin = new URL(document.referrer).origin;

  var inner = document.createElement("iframe");
  inner.setAttribute("sandbox", VIEW_SANDBOX);
  inner.title = "MCP App view";
  document.body.appendChild(inner);

  function isSandboxMessage(message) {
    return message && typeof message.method === "string" && message.method.indexOf("ui/notifications/sandbox-") === 0;
  }

  function allowAttribute(permissions) {
    var features = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };
    return Object.keys(features)
      .filter(function (key) { return permissions && permissions[key]; })
      .map(function (key) { return features[key]; })
      .join("; ");
  }

  window.addEventListener("message", function (event) {
    var message = event.data;
    if (event.source === window.parent) {
      if (event.origin !== hostOrigin) return;
      if (message && message.method === RESOURCE_READY) {
        var params = message.params || {};
        var allow = allowAttribute(params.permissions);
        if (allow) inner.setAttribute("allow", allow);
        inner.srcdoc = String(params.html || "");
        return;
      }
      if (isSandboxMessage(message)) return;
      if (inner.contentWindow) inner.contentWindow.postMessage(message, "*");
    } else if (event.source === inner.contentWindow) {
      if (isSandboxMessage(message)) return;
      window.parent.postMessage(message, hostOrigin);
    }
  });

  window.parent.postMessage({ jsonrpc: "2.0", method: PROXY_READY, params: {} }, hostOrigin);
})();
