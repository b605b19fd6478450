// The sandbox proxy (spec: "Sandbox proxy"): runs on its own origin inside the host page's
// iframe (sandbox="allow-scripts allow-same-origin"), tells the host it is ready, loads the
// view's HTML into an inner iframe when the host sends it, and relays every other message
// between the host and the view. Plain JavaScript, served as is.
"use strict";

(function () {
  const PROXY_READY = "ui/notifications/sandbox-proxy-ready";
  const RESOURCE_READY = "ui/notifications/sandbox-resource-ready";
  // The view runs with an opaque origin: no allow-same-origin, so it cannot reach this
  // proxy's document or storage; forms are allowed, as the reference host allows them.
  const VIEW_SANDBOX = "allow-scripts allow-forms";

  if (window.self === window.top) {
    throw new Error("sandbox.html only runs inside a host page's iframe");
  }
  if (!document.referrer) {
    throw new Error("no referrer: cannot tell which host embeds this sandbox");
  }
  const hostOrigin = new URL(document.referrer).origin;
  if (hostOrigin === location.origin) {
    throw new Error("the host and the sandbox MUST have different origins");
  }

  const inner = document.createElement("iframe");
  inner.setAttribute("sandbox", VIEW_SANDBOX);
  inner.title = "MCP App view";
  document.body.appendChild(inner);

  // Permission Policy features for the inner iframe's allow attribute (spec: permissions).
  function allowAttribute(permissions) {
    const features = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };
    return Object.keys(features).filter((key) => permissions && permissions[key]).map((key) => features[key]).join("; ");
  }

  window.addEventListener("message", (event) => {
    if (event.source === window.parent) {
      if (event.origin !== hostOrigin) return;
      const message = event.data;
      if (message && message.method === RESOURCE_READY) {
        const params = message.params || {};
        if (typeof params.sandbox === "string") inner.setAttribute("sandbox", params.sandbox);
        const allow = allowAttribute(params.permissions);
        if (allow) inner.setAttribute("allow", allow);
        inner.srcdoc = params.html;
        return;
      }
      if (message && typeof message.method === "string" && message.method.startsWith("ui/notifications/sandbox-")) {
        return;
      }
      if (inner.contentWindow) inner.contentWindow.postMessage(message, "*");
    } else if (event.source === inner.contentWindow) {
      const message = event.data;
      if (message && typeof message.method === "string" && message.method.startsWith("ui/notifications/sandbox-")) {
        return;
      }
      window.parent.postMessage(message, hostOrigin);
    }
  });

  window.parent.postMessage({ jsonrpc: "2.0", method: PROXY_READY, params: {} }, hostOrigin);
})();
