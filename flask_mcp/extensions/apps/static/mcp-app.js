/*
 * mcp-app.js: the view side of MCP Apps (io.modelcontextprotocol/ui, stable 2026-01-26),
 * without dependencies and without a build step. Flask-MCP inlines it into a view with
 * {{ mcp_app_script() }}; it defines one global, McpApp.
 *
 * A view runs in a sandboxed iframe and talks JSON-RPC 2.0 with its host over postMessage:
 *
 *   view -> host   ui/initialize (request), then ui/notifications/initialized
 *   host -> view   ui/notifications/tool-input, tool-input-partial, tool-result,
 *                  tool-cancelled, host-context-changed
 *   view -> host   tools/call, resources/read (the host proxies them to the MCP server),
 *                  notifications/message, ui/message, ui/open-link,
 *                  ui/update-model-context, ui/request-display-mode,
 *                  ui/notifications/size-changed
 *   host -> view   ui/resource-teardown (request) before the view goes away, ping
 *
 * Usage:
 *
 *   const app = McpApp.connect({
 *     name: "Todo board", version: "1.0.0",
 *     onToolResult(result) { render(result.structuredContent); },
 *   });
 *   await app.ready;                                  // the handshake is done
 *   const result = await app.callTool("add_todo", { text: "milk" });
 *
 * Every request to the host rejects after `timeout` milliseconds (30 s by default) and
 * with an Error carrying the JSON-RPC `code` when the host answers with an error.
 */
(function (global) {
  "use strict";

  var PROTOCOL_VERSION = "2026-01-26";
  var METHOD_NOT_FOUND = -32601;
  var INTERNAL_ERROR = -32603;

  function McpAppError(error) {
    var failure = new Error(error && error.message ? error.message : "the host answered with an error");
    failure.code = error && error.code;
    failure.data = error && error.data;
    return failure;
  }

  /**
   * Connect to the host: send ui/initialize, then ui/notifications/initialized.
   *
   * Options: name, version (the view's appInfo); the callbacks onToolInput(arguments),
   * onToolInputPartial(arguments), onToolResult(CallToolResult), onToolCancelled(reason),
   * onHostContextChanged(partialContext), onTeardown(reason) (may return a Promise: the
   * host waits for it); availableDisplayModes (default ["inline"]); autoResize (default
   * true: report the document's size with ui/notifications/size-changed); applyHostStyles
   * (default true: copy hostContext.styles.variables to CSS custom properties and the theme
   * to color-scheme); timeout (ms, default 30000); target (default window.parent).
   */
  function connect(options) {
    options = options || {};
    var target = options.target || global.parent;
    var timeout = options.timeout || 30000;
    var nextId = 1;
    var pending = {};
    var closed = false;
    var stopResize = null;
    var app = {
      hostContext: {},
      hostCapabilities: null,
      hostInfo: null,
      ready: null,
    };

    function post(message) {
      target.postMessage(message, "*");
    }

    function request(method, params) {
      if (closed) return Promise.reject(new Error("the view is closed"));
      var id = nextId++;
      return new Promise(function (resolve, reject) {
        var timer = setTimeout(function () {
          delete pending[id];
          reject(new Error(method + ": no answer from the host within " + timeout + " ms"));
        }, timeout);
        pending[id] = { resolve: resolve, reject: reject, timer: timer };
        post({ jsonrpc: "2.0", id: id, method: method, params: params || {} });
      });
    }

    function notify(method, params) {
      if (!closed) post({ jsonrpc: "2.0", method: method, params: params || {} });
    }

    function answer(id, promise) {
      Promise.resolve()
        .then(promise)
        .then(
          function (result) { post({ jsonrpc: "2.0", id: id, result: result || {} }); },
          function (error) {
            post({ jsonrpc: "2.0", id: id, error: { code: INTERNAL_ERROR, message: String(error && error.message || error) } });
          }
        );
    }

    function call(callback, value) {
      if (typeof callback === "function") callback(value);
    }

    function applyStyles(context) {
      if (options.applyHostStyles === false || !context) return;
      var root = document.documentElement;
      var variables = context.styles && context.styles.variables;
      if (variables) {
        Object.keys(variables).forEach(function (name) {
          if (variables[name] !== undefined) root.style.setProperty(name, variables[name]);
        });
      }
      if (context.theme === "light" || context.theme === "dark") {
        root.style.colorScheme = context.theme;
        root.setAttribute("data-theme", context.theme);
      }
    }

    function onHostRequest(message) {
      if (message.method === "ui/resource-teardown") {
        answer(message.id, function () {
          var reason = message.params && message.params.reason;
          var done = options.onTeardown ? options.onTeardown(reason) : undefined;
          return Promise.resolve(done).then(function () {
            close();
            return {};
          });
        });
      } else if (message.method === "ping") {
        post({ jsonrpc: "2.0", id: message.id, result: {} });
      } else {
        post({ jsonrpc: "2.0", id: message.id, error: { code: METHOD_NOT_FOUND, message: "The view does not handle " + message.method } });
      }
    }

    function onHostNotification(message) {
      var params = message.params || {};
      switch (message.method) {
        case "ui/notifications/tool-input":
          call(options.onToolInput, params.arguments || {});
          break;
        case "ui/notifications/tool-input-partial":
          call(options.onToolInputPartial, params.arguments || {});
          break;
        case "ui/notifications/tool-result":
          call(options.onToolResult, params);
          break;
        case "ui/notifications/tool-cancelled":
          call(options.onToolCancelled, params.reason);
          break;
        case "ui/notifications/host-context-changed":
          Object.keys(params).forEach(function (key) { app.hostContext[key] = params[key]; });
          applyStyles(params);
          call(options.onHostContextChanged, params);
          break;
        default:
          break; // other notifications (e.g. list changes) are not used by this helper
      }
    }

    function onMessage(event) {
      if (event.source !== target) return;
      var message = event.data;
      if (!message || message.jsonrpc !== "2.0") return;
      if (message.method === undefined && message.id !== undefined) {
        var waiting = pending[message.id];
        if (!waiting) return;
        delete pending[message.id];
        clearTimeout(waiting.timer);
        if (message.error) waiting.reject(McpAppError(message.error));
        else waiting.resolve(message.result);
      } else if (typeof message.method === "string") {
        if (message.id !== undefined) onHostRequest(message);
        else onHostNotification(message);
      }
    }

    // Report the document's natural size; the host sizes the iframe to it.
    function watchSize() {
      if (options.autoResize === false || typeof ResizeObserver === "undefined") return null;
      var last = { width: -1, height: -1 };
      var scheduled = false;
      function measure() {
        scheduled = false;
        var root = document.documentElement;
        var saved = root.style.height;
        root.style.height = "max-content";
        var height = Math.ceil(root.getBoundingClientRect().height);
        root.style.height = saved;
        var width = Math.ceil(global.innerWidth);
        if (width !== last.width || height !== last.height) {
          last = { width: width, height: height };
          notify("ui/notifications/size-changed", last);
        }
      }
      function schedule() {
        if (!scheduled) {
          scheduled = true;
          (global.requestAnimationFrame || setTimeout)(measure);
        }
      }
      var observer = new ResizeObserver(schedule);
      observer.observe(document.documentElement);
      if (document.body) observer.observe(document.body);
      schedule();
      return function () { observer.disconnect(); };
    }

    function close() {
      if (closed) return;
      closed = true;
      global.removeEventListener("message", onMessage);
      if (stopResize) stopResize();
      Object.keys(pending).forEach(function (id) {
        clearTimeout(pending[id].timer);
        pending[id].reject(new Error("the view is closed"));
      });
      pending = {};
    }

    global.addEventListener("message", onMessage);

    app.ready = request("ui/initialize", {
      appInfo: { name: options.name || document.title || "view", version: options.version || "0" },
      appCapabilities: { availableDisplayModes: options.availableDisplayModes || ["inline"] },
      protocolVersion: PROTOCOL_VERSION,
    }).then(function (result) {
      app.hostContext = result.hostContext || {};
      app.hostCapabilities = result.hostCapabilities || {};
      app.hostInfo = result.hostInfo || null;
      app.protocolVersion = result.protocolVersion;
      applyStyles(app.hostContext);
      notify("ui/notifications/initialized", {});
      stopResize = watchSize();
      return result;
    });

    /** Call a tool of the view's MCP server through the host; resolves to its CallToolResult. */
    app.callTool = function (name, args) {
      return request("tools/call", { name: name, arguments: args || {} });
    };
    /** Read a resource of the view's MCP server through the host. */
    app.readResource = function (uri) {
      return request("resources/read", { uri: uri });
    };
    /** Send a log message to the host (notifications/message). */
    app.log = function (level, data, logger) {
      var params = { level: level, data: data };
      if (logger) params.logger = logger;
      notify("notifications/message", params);
    };
    /** Add a user message to the host's conversation (ui/message: a list of content blocks). */
    app.sendMessage = function (text) {
      return request("ui/message", { role: "user", content: [{ type: "text", text: text }] });
    };
    /** Ask the host to open a URL (ui/open-link). */
    app.openLink = function (url) {
      return request("ui/open-link", { url: url });
    };
    /** Replace the context the view gives the model (ui/update-model-context). */
    app.updateModelContext = function (params) {
      return request("ui/update-model-context", params || {});
    };
    /** Ask for another display mode; resolves to the mode the host set. */
    app.requestDisplayMode = function (mode) {
      return request("ui/request-display-mode", { mode: mode });
    };
    /** Report a size yourself (with autoResize: false). */
    app.sendSizeChanged = function (width, height) {
      notify("ui/notifications/size-changed", { width: width, height: height });
    };
    /** Stop listening and reject what is still waiting. */
    app.close = close;
    return app;
  }

  global.McpApp = { connect: connect, PROTOCOL_VERSION: PROTOCOL_VERSION };
})(typeof window !== "undefined" ? window : this);
