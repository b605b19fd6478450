// The Flask-MCP explorer: an MCP client of the app's own endpoint, in the browser.
//
// Plain JavaScript, no build step, no dependency: the page's Content-Security-Policy lets
// it load nothing but this file and explorer.css and talk to nothing but its own origin.
// It speaks Streamable HTTP in the era the user picks:
//   - 2025-11-25: initialize, a session (Mcp-Session-Id), logging/setLevel, server requests
//     (elicitation, sampling, roots) on the request's SSE stream, answered with a POST,
//     notifications/cancelled to cancel;
//   - 2026-07-28: server/discover, no session, _meta on every request, Mcp-Method/Mcp-Name
//     headers, input_required results answered by retrying with inputResponses and
//     requestState, cancel by closing the response.
// Tools that run as tasks are called as tasks in both eras: params.task, tasks/get and
// tasks/result in 2025-11-25; the io.modelcontextprotocol/tasks extension (declared on
// the call and on every tasks/* request, which names the task in Mcp-Name), tasks/get,
// tasks/update and tasks/cancel in 2026-07-28.
// It also hosts MCP App views (io.modelcontextprotocol/ui, 2026-01-26): a sandbox proxy
// iframe, the view inside it, and the host side of the view's postMessage protocol.
"use strict";

(function () {
  var CONFIG = JSON.parse(document.body.getAttribute("data-config") || "{}");
  var ENDPOINT = CONFIG.endpoint || "/mcp";
  var APP_MIME = "text/html;profile=mcp-app";
  var UI_EXTENSION = "io.modelcontextprotocol/ui";
  var TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
  var TERMINAL = { completed: true, failed: true, cancelled: true };
  var APPS_PROTOCOL = "2026-01-26";
  var META = "io.modelcontextprotocol/";
  var CLIENT_INFO = { name: "flask-mcp-explorer", title: "Flask-MCP explorer", version: "1.0.0" };
  var CLIENT_CAPABILITIES = {
    elicitation: { form: {}, url: {} },
    sampling: {},
    roots: { listChanged: false },
    extensions: {},
  };
  CLIENT_CAPABILITIES.extensions[UI_EXTENSION] = { mimeTypes: [APP_MIME] };
  var WAIT_MS = 30000;
  var URL_ELICITATION_REQUIRED = -32042;

  // -- small DOM helpers ----------------------------------------------------------------

  var uid = 0;
  function nextId(prefix) { uid += 1; return (prefix || "f") + "-" + uid; }

  function el(tag, attrs) {
    var node = document.createElement(tag);
    var key;
    attrs = attrs || {};
    for (key in attrs) {
      if (!Object.prototype.hasOwnProperty.call(attrs, key) || attrs[key] === undefined || attrs[key] === null) continue;
      var value = attrs[key];
      if (key === "text") node.textContent = value;
      else if (key === "class") node.className = value;
      else if (key.slice(0, 2) === "on" && typeof value === "function") node.addEventListener(key.slice(2), value);
      else if (value === true) node.setAttribute(key, "");
      else if (value !== false) node.setAttribute(key, String(value));
    }
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }

  function append(node, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
    else node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }

  // Empty node. The download links made for blobs in it (renderBlob) are released: each
  // holds its bytes in the browser until URL.revokeObjectURL.
  function clear(node) {
    Array.prototype.forEach.call(node.querySelectorAll("a.blob-download"), function (link) { URL.revokeObjectURL(link.href); });
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  // -- JSON with exact big integers -------------------------------------------------------------

  // JSON.parse rounds an integer past 2^53 to the nearest double (9007199254740993 becomes
  // ...992). parseJson keeps it a number, for the page's logic and its views, and remembers
  // its source text, by holder object and key; pretty() and compact() write that text, in
  // what the page shows and in what it sends. A form field the user typed such an integer
  // in gives its digits (field.typed()) to the object or array that holds its value (put).
  var EXACT = new WeakMap();
  var EXACT_TAG = "exact-integer-" + Math.random().toString(36).slice(2) + ":";
  var EXACT_SHOWN = new RegExp('"' + EXACT_TAG + '(-?[0-9]+)"', "g");
  var JSON_NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

  function keepExact(holder, key, digits) {
    var exact = EXACT.get(holder);
    if (!exact) { exact = {}; EXACT.set(holder, exact); }
    exact[key] = digits;
  }

  // The digits holder[key] was read or typed with, while it still holds their number.
  function exactDigits(holder, key) {
    var exact = holder && typeof holder === "object" ? EXACT.get(holder) : undefined;
    if (!exact || !Object.prototype.hasOwnProperty.call(exact, key)) return undefined;
    return Number(exact[key]) === holder[key] ? exact[key] : undefined;
  }

  // The digits of an integer typed as text, when a double cannot hold it.
  function bigInteger(text) {
    var match = /^\s*(-?)0*([0-9]+)\s*$/.exec(text);
    return match && !Number.isSafeInteger(Number(match[0])) ? match[1] + match[2] : undefined;
  }

  // holder[key] = a value read from a field, with the digits the user typed in it.
  function put(holder, key, field, value) {
    holder[key] = value;
    var digits = field.typed ? field.typed() : undefined;
    if (digits !== undefined) keepExact(holder, key, digits);
  }

  function reviveExact(key, value) {
    if (typeof value !== "string" || value.indexOf(EXACT_TAG) !== 0) return value;
    var digits = value.slice(EXACT_TAG.length);
    keepExact(this, key, digits);
    return Number(digits);
  }

  function parseJson(text) {
    if (!/[0-9]{16}/.test(text)) return JSON.parse(text);
    // outside strings, put each integer a double cannot hold in a tagged string
    var tagged = "";
    var start = 0;
    var i = 0;
    while (i < text.length) {
      var c = text.charAt(i);
      if (c === '"') {
        for (i += 1; i < text.length && text.charAt(i) !== '"'; i += text.charAt(i) === "\\" ? 2 : 1);
        i += 1;
      } else if (c === "-" || (c >= "0" && c <= "9")) {
        JSON_NUMBER.lastIndex = i;
        var match = JSON_NUMBER.exec(text);
        if (!match) { i += 1; continue; }
        if (!match[1] && !match[2] && !Number.isSafeInteger(Number(match[0]))) {
          tagged += text.slice(start, i) + '"' + EXACT_TAG + match[0] + '"';
          start = i + match[0].length;
        }
        i += match[0].length;
      } else i += 1;
    }
    return JSON.parse(tagged + text.slice(start), reviveExact);
  }

  function stringify(value, indent) {
    var shown = false;
    var text = JSON.stringify(value, function (key, item) {
      var digits = typeof item === "number" ? exactDigits(this, key) : undefined;
      if (digits === undefined) return item;
      shown = true;
      return EXACT_TAG + digits;
    }, indent);
    return shown ? text.replace(EXACT_SHOWN, "$1") : text;
  }

  function pretty(value) { return stringify(value, 2); }
  function compact(value) { return stringify(value); }
  function $(id) { return document.getElementById(id); }

  function setStatus(text) { $("status").textContent = text; }

  // -- the exchange log ---------------------------------------------------------------------

  var exchangeListeners = [];
  function recordExchange(direction, message, note) {
    var entry = { direction: direction, message: message, note: note || "" };
    var item = el("li", { class: "exchange-" + (direction === "out" ? "out" : "in") },
      el("span", { class: "arrow", text: direction === "out" ? "→ sent" : "← received" }),
      note ? el("span", { class: "note", text: " " + note }) : null,
      el("pre", { text: pretty(message) }));
    $("exchange").appendChild(item);
    exchangeListeners.forEach(function (listener) { listener(entry); });
  }

  // -- Server-Sent Events ---------------------------------------------------------------------

  // Read an event stream; call onEvent({data, id}) per event; resolves when the stream ends.
  function readEvents(response, onEvent) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function flush(block) {
      var data = [];
      var id = null;
      block.split(/\r\n|\r|\n/).forEach(function (line) {
        if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
        else if (line.indexOf("id:") === 0) id = line.slice(3).trim();
      });
      if (data.length) onEvent({ data: data.join("\n"), id: id });
      else if (id !== null) onEvent({ data: null, id: id });
    }
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) {
          if (buffer.trim()) flush(buffer);
          return;
        }
        buffer += decoder.decode(chunk.value, { stream: true });
        var parts = buffer.split(/\r\n\r\n|\n\n|\r\r/);
        buffer = parts.pop();
        parts.forEach(flush);
        return pump();
      });
    }
    return pump();
  }

  // -- the MCP client ---------------------------------------------------------------------------

  function RpcError(error, status) {
    var failure = new Error((error && error.message) || "error");
    failure.code = error && error.code;
    failure.data = error && error.data;
    failure.status = status;
    return failure;
  }

  function base64Utf8(text) {
    var bytes = new TextEncoder().encode(text);
    var binary = "";
    bytes.forEach(function (b) { binary += String.fromCharCode(b); });
    return btoa(binary);
  }

  // The header form of an Mcp-Name or Mcp-Param-* value (the Base64 sentinel when needed).
  function headerValue(value) {
    if (typeof value === "boolean") return value ? "true" : "false";
    if (typeof value === "number") return String(value);
    var plain = /^[\x20-\x7e]*$/.test(value) && value === value.replace(/^[ \t]+|[ \t]+$/g, "");
    var sentinel = value.indexOf("=?base64?") === 0 && value.slice(-2) === "?=";
    return plain && !sentinel ? value : "=?base64?" + base64Utf8(value) + "?=";
  }

  // token: an optional bearer token, sent as the Authorization header; it lives in this
  // object only (never stored, never put in a URL or in "copy as curl").
  function Client(version, handlers, token) {
    this.version = version;
    this.token = token || null;
    this.stateless = version >= "2026";
    this.handlers = handlers;
    this.sessionId = null;
    this.negotiated = null;
    this.serverResult = null;
    this.tools = {};
    this.ids = 0;
    this.asked = {};
  }

  // The _meta of a 2026-07-28 request; withTasks declares the tasks extension too (only on
  // task calls and tasks/*: a server may make a task of any call that declares it).
  Client.prototype.meta = function (withTasks) {
    var meta = {};
    var capabilities = CLIENT_CAPABILITIES;
    if (withTasks) {
      capabilities = Object.assign({}, CLIENT_CAPABILITIES, { extensions: Object.assign({}, CLIENT_CAPABILITIES.extensions) });
      capabilities.extensions[TASKS_EXTENSION] = {};
    }
    meta[META + "protocolVersion"] = this.version;
    meta[META + "clientInfo"] = CLIENT_INFO;
    meta[META + "clientCapabilities"] = capabilities;
    meta[META + "logLevel"] = "debug";
    return meta;
  };

  // The headers a request carries, as the page sends them (and "copy as curl" shows them).
  Client.prototype.headers = function (message) {
    var headers = { "Content-Type": "application/json", "Accept": "application/json, text/event-stream" };
    if (this.token) headers["Authorization"] = "Bearer " + this.token;
    if (this.stateless) {
      headers["MCP-Protocol-Version"] = this.version;
      if (message.method) {
        headers["Mcp-Method"] = message.method;
        var params = message.params || {};
        var name = message.method === "resources/read" ? params.uri
          : (message.method === "tools/call" || message.method === "prompts/get") ? params.name
          : message.method.indexOf("tasks/") === 0 ? params.taskId : undefined;
        if (typeof name === "string") headers["Mcp-Name"] = headerValue(name);
        if (message.method === "tools/call") Object.assign(headers, this.paramHeaders(params));
      }
    } else if (this.sessionId) {
      headers["Mcp-Session-Id"] = this.sessionId;
      headers["MCP-Protocol-Version"] = this.negotiated || this.version;
    }
    return headers;
  };

  // Mirror the arguments a tool marks "x-mcp-header" into Mcp-Param-* headers.
  Client.prototype.paramHeaders = function (params) {
    var tool = this.tools[params.name];
    var found = {};
    var properties = (tool && tool.inputSchema && tool.inputSchema.properties) || {};
    Object.keys(properties).forEach(function (key) {
      var header = properties[key] && properties[key]["x-mcp-header"];
      var value = params.arguments ? params.arguments[key] : undefined;
      if (header && (typeof value === "string" || typeof value === "number" || typeof value === "boolean")) {
        found["Mcp-Param-" + header] = exactDigits(params.arguments, key) || headerValue(value);
      }
    });
    return found;
  };

  Client.prototype.post = function (message, signal) {
    recordExchange("out", message);
    return fetch(ENDPOINT, {
      method: "POST",
      headers: this.headers(message),
      body: compact(message),
      signal: signal,
      credentials: "same-origin",
      cache: "no-store",
    });
  };

  // 2025-11-25: a 404 to a request carrying session id `sent` means the server ended that
  // session (a reloaded dev server, say): the client MUST start a new one. Requests that
  // meet the same 404 meanwhile share the new handshake; onRenew(result) follows it.
  Client.prototype.renew = function (sent) {
    var self = this;
    if (this.closed) return Promise.reject(RpcError({ code: -32600, message: "the explorer disconnected" }));
    if (this.sessionId !== sent) return this.renewing || Promise.resolve();
    this.sessionId = null;
    setStatus("the server ended session " + sent + "; starting a new one");
    this.renewing = this.connect().then(function (result) {
      self.renewing = null;
      if (self.listener) { // the change notifications of the new session
        self.listening.abort();
        self.listen(self.listener);
      }
      if (self.onRenew) self.onRenew(result);
      return result;
    }, function (error) { self.renewing = null; throw error; });
    return this.renewing;
  };

  // Send one message and return the JSON-RPC answer to it (null for a notification).
  Client.prototype.exchange = function (message, call, renewed) {
    var self = this;
    var sent = this.stateless ? null : this.sessionId;
    return this.post(message, call.abort && call.abort.signal).then(function (response) {
      if (response.status === 404 && sent && !renewed && message.method !== undefined) {
        return response.text().then(function () { return self.renew(sent); }).then(function () {
          return self.exchange(message, call, true);
        });
      }
      if (!self.stateless && message.method === "initialize") {
        self.sessionId = response.headers.get("Mcp-Session-Id");
      }
      var type = response.headers.get("Content-Type") || "";
      if (message.id === undefined) return accepted(response, message.method);
      if (type.indexOf("text/event-stream") === 0) return self.readStream(response, message.id, call);
      return response.text().then(function (text) {
        var answer;
        try { answer = parseJson(text); } catch (e) { answer = null; }
        // 401: the endpoint needs a (valid) token; say where the page takes one
        var hint = response.status !== 401 ? "" : " (HTTP 401: the endpoint needs authorization: enter a bearer token" +
          (self.token ? " it accepts" : "") + " and connect again; WWW-Authenticate: " + (response.headers.get("WWW-Authenticate") || "none") + ")";
        if (!answer || (answer.result === undefined && answer.error === undefined)) {
          throw RpcError({ code: -32603, message: "HTTP " + response.status + ": " + text.slice(0, 300) + hint }, response.status);
        }
        recordExchange("in", answer, "HTTP " + response.status);
        if (hint && answer.error) answer = Object.assign({}, answer, { error: Object.assign({}, answer.error, { message: answer.error.message + hint }) });
        return answer;
      });
    });
  };

  // The server accepts a notification or an answer with 202 and no body; anything else is
  // an error (its body may hold a JSON-RPC error without an id): the promise rejects.
  function accepted(response, what) {
    return response.text().then(function (text) {
      if (response.status === 202) return null;
      var answer;
      try { answer = parseJson(text); } catch (e) { answer = null; }
      if (answer && answer.error) recordExchange("in", answer, "HTTP " + response.status);
      var error = (answer && answer.error) || { code: -32603, message: text.slice(0, 300) };
      throw RpcError({ code: error.code, data: error.data,
        message: "HTTP " + response.status + " to " + what + " (a server accepts it with 202): " + error.message }, response.status);
    });
  }

  Client.prototype.readStream = function (response, id, call) {
    var self = this;
    var answer = null;
    var lastId = null;
    function onEvent(event) {
      if (event.id) lastId = event.id;
      if (!event.data) return;
      var message;
      try { message = parseJson(event.data); } catch (e) { return; }
      recordExchange("in", message, "SSE");
      if (message.method === undefined && message.id === id) answer = message;
      else if (message.method === "notifications/cancelled") self.withdrawn(message.params || {});
      else if (message.method === "notifications/elicitation/complete") elicitationComplete(message.params || {});
      else if (message.method !== undefined && message.id !== undefined) self.answerServerRequest(message, call);
      else if (message.method !== undefined && call.onNotification) call.onNotification(message);
    }
    return readEvents(response, onEvent).then(function () {
      if (answer) return answer;
      if (!self.stateless && lastId && !(call.abort && call.abort.signal.aborted)) {
        // The server closed the stream early: resume it after the last event, with a GET.
        var headers = self.headers({});
        headers["Accept"] = "text/event-stream";
        headers["Last-Event-ID"] = lastId;
        delete headers["Content-Type"];
        return fetch(ENDPOINT, { method: "GET", headers: headers, signal: call.abort && call.abort.signal, credentials: "same-origin" })
          .then(function (resumed) { return self.readStream(resumed, id, call); });
      }
      throw RpcError({ code: -32603, message: "the stream ended without an answer" });
    });
  };

  // A server-to-client request on a 2025-11-25 stream: answer it with a POST. Its ticket
  // gets the form that asks the user (ticket.form), taken away if the server withdraws it.
  Client.prototype.answerServerRequest = function (message, call) {
    var self = this;
    var key = JSON.stringify(message.id);
    var ticket = this.asked[key] = { method: message.method };
    this.handle(message.method, message.params || {}, call, ticket).then(
      function (result) { return { jsonrpc: "2.0", id: message.id, result: result }; },
      function (error) { return { jsonrpc: "2.0", id: message.id, error: { code: error.code || -32603, message: error.message } }; }
    ).then(function (reply) {
      if (self.asked[key] === ticket) delete self.asked[key];
      if (ticket.withdrawn) return null;
      return self.post(reply).then(function (response) { return accepted(response, "the answer to " + message.method); });
    }).catch(function (error) { setStatus("could not answer " + message.method + ": " + error.message); });
  };

  Client.prototype.handle = function (method, params, call, ticket) {
    if (method === "ping") return Promise.resolve({});
    var handler = this.handlers[method];
    if (!handler) return Promise.reject(RpcError({ code: -32601, message: "The explorer does not handle " + method }));
    call = call || {};
    if (call.superseded) return Promise.resolve(method).then(dismissed);
    var answered = Promise.resolve(handler(params, call, ticket || {}));
    if (!call.whenSuperseded) return answered;
    return Promise.race([answered, call.whenSuperseded.then(function () { return dismissed(method); })]);
  };

  // The answer to a question of a request that a newer one replaced, or whose panel the
  // user left: its form is gone, and the server is told not to wait for the user. An
  // elicitation the user dismissed without a choice is answered {action: "cancel"} (the
  // spec's meaning of it, in both eras); sampling and roots have no such answer: an error.
  function dismissed(method) {
    if (method === "elicitation/create") return { action: "cancel" };
    throw supersededError(method);
  }

  function supersededError(method) {
    var error = RpcError({ code: -1, message: "The explorer dropped this " + method +
      ": the request that asked is no longer shown (a newer one replaced it, or another item was opened)" });
    error.superseded = true;
    return error;
  }

  // notifications/cancelled from the server: it no longer waits for the answer to one of
  // its requests (its MCP_CLIENT_REQUEST_TIMEOUT is over, say). Its form leaves the page
  // and no answer is sent.
  Client.prototype.withdrawn = function (params) {
    var key = JSON.stringify(params.requestId);
    var ticket = this.asked[key];
    if (!ticket) return;
    delete this.asked[key];
    ticket.withdrawn = true;
    var form = ticket.form;
    if (form && form.parentNode) {
      form.parentNode.replaceChild(el("p", { class: "muted withdrawn", text: "The server withdrew its " + ticket.method +
        (params.reason ? ": " + params.reason : "") }), form);
    }
  };

  // `promise`, or a rejection as soon as the call is aborted: between two rounds of a
  // 2026-07-28 request no fetch is open for the abort to end, only the user's answers.
  function unlessAborted(call, promise) {
    var signal = call.abort && call.abort.signal;
    if (!signal) return promise;
    return new Promise(function (resolvePromise, reject) {
      function stop() {
        var error = new Error("the call was cancelled");
        error.cancelled = true;
        reject(error);
      }
      if (signal.aborted) stop();
      signal.addEventListener("abort", stop);
      promise.then(resolvePromise, reject).then(function () { signal.removeEventListener("abort", stop); });
    });
  }

  // Send a request; answer what the server asks on the way; return its result.
  Client.prototype.request = function (method, params, call) {
    var self = this;
    call = call || {};
    params = Object.assign({}, params || {});
    if (this.stateless) params._meta = Object.assign(this.meta(call.tasks), params._meta || {});
    var rounds = 0;
    function round(currentParams) {
      self.ids += 1;
      var message = { jsonrpc: "2.0", id: self.ids, method: method, params: currentParams };
      call.currentId = message.id;
      call.lastMessage = message;
      return self.exchange(message, call).then(function (answer) {
        if (answer.error) throw RpcError(answer.error);
        var result = answer.result;
        if (self.stateless && result && result.resultType === "input_required") {
          rounds += 1;
          if (rounds > 10) throw new Error("the server asked for input more than 10 times in a row");
          var asked = result.inputRequests || {};
          var keys = Object.keys(asked);
          return unlessAborted(call, Promise.all(keys.map(function (key) {
            return self.handle(asked[key].method, asked[key].params || {}, call);
          }))).then(function (answers) {
            var retry = Object.assign({}, currentParams);
            delete retry.inputResponses;
            delete retry.requestState;
            if (keys.length) {
              retry.inputResponses = {};
              keys.forEach(function (key, i) { retry.inputResponses[key] = answers[i]; });
            }
            if (result.requestState !== undefined) retry.requestState = result.requestState;
            return round(retry);
          });
        }
        return result;
      });
    }
    return round(params);
  };

  Client.prototype.notify = function (method, params) {
    return this.exchange({ jsonrpc: "2.0", method: method, params: params || {} }, {});
  };

  Client.prototype.connect = function () {
    var self = this;
    if (this.stateless) {
      return this.request("server/discover", {}).then(function (result) {
        self.serverResult = result;
        return result;
      });
    }
    return this.request("initialize", {
      protocolVersion: this.version,
      capabilities: CLIENT_CAPABILITIES,
      clientInfo: CLIENT_INFO,
    }).then(function (result) {
      self.serverResult = result;
      self.negotiated = result.protocolVersion;
      return self.notify("notifications/initialized").then(function () {
        if (result.capabilities && result.capabilities.logging) {
          return self.request("logging/setLevel", { level: "debug" }).catch(function () { return null; });
        }
      }).then(function () { return result; });
    });
  };

  // Cancel `call`; the page stops waiting for it either way. Rejects when the server did
  // not accept the 2025-11-25 notifications/cancelled (the request may go on there).
  Client.prototype.cancel = function (call, reason) {
    var done = Promise.resolve();
    if (!this.stateless && call.currentId !== undefined) {
      done = this.notify("notifications/cancelled", { requestId: call.currentId, reason: reason });
    }
    function stop() { if (call.abort) call.abort.abort(); }
    return done.then(stop, function (error) { stop(); throw error; });
  };

  // Open the stream of change notifications: subscriptions/listen in 2026-07-28, the
  // session's GET stream in 2025-11-25 (where the server may also ask the client things).
  // Reopened when the server ends it, until close().
  Client.prototype.listen = function (onNotification) {
    var self = this;
    if (this.closed) return;
    this.listener = onNotification;
    var abort = this.listening = new AbortController();
    var opened;
    if (this.stateless) {
      this.ids += 1;
      opened = this.post({
        jsonrpc: "2.0", id: this.ids, method: "subscriptions/listen",
        params: { notifications: { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true }, _meta: this.meta() },
      }, abort.signal);
    } else {
      var headers = this.headers({});
      headers["Accept"] = "text/event-stream";
      delete headers["Content-Type"];
      opened = fetch(ENDPOINT, { method: "GET", headers: headers, signal: abort.signal, credentials: "same-origin" });
    }
    var sent = this.stateless ? null : this.sessionId;
    opened.then(function (response) {
      if (response.status === 404 && sent) {
        // the session is gone: renew() listens again on the new one
        return response.text().then(function () { return self.renew(sent); }).then(function () { return false; });
      }
      if ((response.headers.get("Content-Type") || "").indexOf("text/event-stream") !== 0) {
        return response.text().then(function () { return false; }); // no stream offered: stop
      }
      return readEvents(response, function (event) {
        if (!event.data) return;
        var message;
        try { message = parseJson(event.data); } catch (e) { return; }
        recordExchange("in", message, self.stateless ? "subscriptions/listen" : "GET stream");
        if (message.method === "notifications/cancelled") self.withdrawn(message.params || {});
        else if (message.method === "notifications/elicitation/complete") elicitationComplete(message.params || {});
        else if (message.method !== undefined && message.id !== undefined) self.answerServerRequest(message, {});
        else if (message.method !== undefined) onNotification(message);
      }).then(function () { return true; });
    }).then(function (again) {
      self.listenFailures = 0;
      if (again && !abort.signal.aborted) setTimeout(function () { self.listen(onNotification); }, 1000);
    }, function () {
      // the connection broke (the server restarted, say): try again, less and less often
      if (abort.signal.aborted) return;
      self.listenFailures = (self.listenFailures || 0) + 1;
      setTimeout(function () { self.listen(onNotification); }, Math.min(1000 * Math.pow(2, self.listenFailures), 30000));
    });
  };

  Client.prototype.close = function () {
    this.closed = true;
    if (this.listening) this.listening.abort();
    if (this.stateless || !this.sessionId) return Promise.resolve();
    return fetch(ENDPOINT, { method: "DELETE", headers: this.headers({}), credentials: "same-origin" }).catch(function () { return null; });
  };

  // Whether the server runs tools as tasks (2025-11-25: tasks.requests.tools.call;
  // 2026-07-28: the tasks extension in its capabilities).
  Client.prototype.runsTasks = function () {
    var capabilities = (this.serverResult && this.serverResult.capabilities) || {};
    if (this.stateless) return !!(capabilities.extensions && capabilities.extensions[TASKS_EXTENSION]);
    var requests = capabilities.tasks && capabilities.tasks.requests;
    return !!(requests && requests.tools && requests.tools.call);
  };

  // Call a tool as a task and follow the task to its end; resolves with the tool's result.
  // show(task) gets each state seen; call.taskId is set once the task exists (cancel uses
  // it). A server may answer at once (2026-07-28: it decides): that result is returned.
  Client.prototype.callAsTask = function (params, call, show) {
    var self = this;
    if (!this.runsTasks()) {
      return Promise.reject(RpcError({ code: -32601, message: "The tool runs as a task, but the server does not offer tasks in this era (" + this.version + ")" }));
    }
    call.tasks = true;
    if (!this.stateless) params = Object.assign({}, params, { task: {} });
    return this.request("tools/call", params, call).then(function (answer) {
      if (self.stateless && answer.resultType === "task") return self.followTask(taskFields(answer), call, show);
      if (!self.stateless && answer.task) return self.followTask(taskFields(answer.task), call, show);
      return answer;
    });
  };

  function taskFields(result) {
    var task = Object.assign({}, result);
    delete task.resultType;
    delete task._meta;
    return task;
  }

  function pollDelay(task) {
    var ms = task.pollIntervalMs;
    return Math.min(Math.max(typeof ms === "number" ? ms : 1000, 100), 5000);
  }

  Client.prototype.followTask = function (task, call, show) {
    var self = this;
    var taskId = task.taskId;
    call.taskId = taskId;
    show(task);
    // bounded: a task not over within its ttl is given up (the server drops it then)
    var deadline = Date.now() + (typeof task.ttlMs === "number" ? task.ttlMs : 3600000) + 5000;
    var answered = {};
    var streamed = null;
    if (!this.stateless) {
      // 2025-11-25: tasks/result blocks until the task is over; the task's questions
      // arrive on its stream and are answered there. tasks/get shows the status meanwhile.
      streamed = this.request("tasks/result", { taskId: taskId }, { abort: call.abort, questions: call.questions, whenSuperseded: call.whenSuperseded })
        .then(function (result) { return { result: result }; }, function (error) { return { error: error }; });
    }
    function answerInputs(current) {
      var asked = current.inputRequests || {};
      Object.keys(asked).forEach(function (key) {
        if (answered[key]) return;
        answered[key] = true;
        self.handle(asked[key].method, asked[key].params || {}, call).then(function (answer) {
          var responses = {};
          responses[key] = answer;
          return self.request("tasks/update", { taskId: taskId, inputResponses: responses }, { tasks: true });
        }, function (error) {
          // a question nobody sees any more, with no answer saying so (sampling, roots; an
          // elicitation is answered cancel): the task would wait for its answer until its
          // ttl, so it is cancelled (its result was dropped with its panel)
          if (error.superseded) return self.cancelTask(taskId);
          throw error;
        }).catch(function (error) { setStatus("could not answer the task's " + asked[key].method + ": " + error.message); });
      });
    }
    return new Promise(function (resolvePromise, reject) {
      function finish(current) {
        if (current.status === "cancelled") {
          var stopped = new Error("the task was cancelled");
          stopped.cancelled = true;
          reject(stopped);
        } else if (streamed) {
          streamed.then(function (outcome) { if (outcome.error) reject(outcome.error); else resolvePromise(outcome.result); });
        } else if (current.status === "completed") {
          resolvePromise(current.result || {});
        } else {
          reject(RpcError(current.error || { code: -32603, message: current.statusMessage || "the task failed" }));
        }
      }
      function poll() {
        if (Date.now() > deadline) {
          reject(new Error("task " + taskId + " is not over after its time to live; the explorer stopped waiting"));
          return;
        }
        self.request("tasks/get", { taskId: taskId }, { tasks: true }).then(function (current) {
          current = taskFields(current);
          show(current);
          if (TERMINAL[current.status]) { finish(current); return; }
          if (self.stateless && current.status === "input_required") answerInputs(current);
          setTimeout(poll, pollDelay(current));
        }, reject);
      }
      setTimeout(poll, pollDelay(task));
    });
  };

  Client.prototype.cancelTask = function (taskId) {
    return this.request("tasks/cancel", { taskId: taskId }, { tasks: true });
  };

  Client.prototype.serverInfo = function () {
    var result = this.serverResult || {};
    return result.serverInfo || (result._meta && result._meta[META + "serverInfo"]) || {};
  };

  // Every page of a list method.
  Client.prototype.listAll = function (method, key) {
    var self = this;
    var items = [];
    function page(cursor, pages) {
      var params = cursor ? { cursor: cursor } : {};
      return self.request(method, params).then(function (result) {
        items = items.concat(result[key] || []);
        if (result.nextCursor && pages < 50) return page(result.nextCursor, pages + 1);
        return items;
      });
    }
    return page(null, 0);
  };

  // -- shell quoting for "copy as" -------------------------------------------------------------

  function shellQuote(text) { return "'" + String(text).replace(/'/g, "'\\''") + "'"; }

  function asCurl(client, message) {
    var url = new URL(ENDPOINT, location.href).href;
    var headers = client.headers(message);
    var lines = ["curl -sS -N -X POST " + shellQuote(url)];
    Object.keys(headers).forEach(function (name) {
      // the token stays in the page: the command reads it from the shell
      if (name === "Authorization") lines.push('  -H "Authorization: Bearer $MCP_TOKEN"');
      else lines.push("  -H " + shellQuote(name + ": " + headers[name]));
    });
    lines.push("  --data-raw " + shellQuote(compact(message)));
    return lines.join(" \\\n");
  }

  function asFlaskCall(name, args) {
    // with URL variables in MCP_PATH, the command names the endpoint explored (--path)
    var path = CONFIG.cliPath ? "--path " + shellQuote(CONFIG.cliPath) + " " : "";
    return "flask mcp " + path + "call " + shellQuote(name) + " --json " + shellQuote(compact(args || {}));
  }

  function copyText(text, output) {
    output.value = text;
    output.hidden = false;
    output.select();
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).catch(function () { return null; });
    }
  }

  // -- forms from JSON Schema --------------------------------------------------------------------

  function resolve(schema, root) {
    var seen = 0;
    while (schema && typeof schema.$ref === "string" && schema.$ref.indexOf("#/") === 0 && seen < 20) {
      var target = root;
      schema.$ref.slice(2).split("/").forEach(function (part) {
        target = target ? target[part.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
      });
      schema = target;
      seen += 1;
    }
    return schema || {};
  }

  // Optional[X] in JSON Schema: anyOf [X, {type: null}] -> X, marked nullable. A default of
  // null (X | None = None) is no default of X: the field starts empty and is left out unless
  // filled.
  function unwrapNullable(schema, root) {
    schema = resolve(schema, root);
    var fallback = schema.default === null ? undefined : schema.default;
    var options = schema.anyOf || schema.oneOf;
    if (Array.isArray(options)) {
      var rest = options.filter(function (option) { return resolve(option, root).type !== "null"; });
      if (rest.length === 1 && rest.length < options.length) {
        return Object.assign({}, resolve(rest[0], root), { title: schema.title, description: schema.description, default: fallback, nullable: true });
      }
    }
    if (Array.isArray(schema.type)) {
      var types = schema.type.filter(function (type) { return type !== "null"; });
      if (types.length === 1) return Object.assign({}, schema, { type: types[0], default: fallback, nullable: types.length < schema.type.length });
    }
    return schema;
  }

  // A titled enum of elicitation forms, oneOf (or anyOf, in a multi-select's items) of
  // {const, title}: an enum whose options show the titles (enumNames, as the legacy form).
  function titledEnum(schema) {
    var options = schema.oneOf || schema.anyOf;
    if (Array.isArray(schema.enum) || !Array.isArray(options) || !options.length) return schema;
    var titled = options.every(function (option) { return option && typeof option === "object" && option.const !== undefined; });
    if (!titled) return schema;
    var values = options.map(function (option) { return option.const; });
    options.forEach(function (option, i) {
      var digits = exactDigits(option, "const");
      if (digits !== undefined) keepExact(values, i, digits);
    });
    return Object.assign({}, schema, {
      enum: values,
      enumNames: options.map(function (option) { return option.title !== undefined ? String(option.title) : String(option.const); }),
    });
  }

  function fieldLabel(name, schema, required) {
    var text = schema.title || name;
    return text + (required ? " (required)" : "");
  }

  // The error of a required field left empty: an optional object left empty is no error.
  function missing(where) {
    var error = new Error(where + " is required");
    error.empty = true;
    return error;
  }

  function describe(schema, id) {
    return schema.description ? el("small", { class: "hint", id: id, text: schema.description }) : null;
  }

  // Build the field of one value; returns {node, read(), set(value), rename(name, path)}.
  // read() returns undefined when an optional field is left empty, and throws with what is
  // wrong; rename() gives the field another name and path (an array item renumbered).
  // answer: the field answers an elicitation, where a checkbox shown from its default
  // answers that value untouched (in tool arguments it is left out: the server's default).
  function buildField(schema, name, required, root, path, answer) {
    schema = titledEnum(unwrapNullable(schema, root));
    var field = buildValueField(schema, name, required, root, path, answer);
    // an answer to an elicitation is never null (its values are strings, numbers, booleans)
    return schema.nullable && !answer ? nullableField(field, schema, name, required) : field;
  }

  // The field of a value that may also be null (X | None): its "null" box sends an explicit
  // null, the value's own inputs disabled meanwhile. Not checked, the field reads as it
  // would without it (an optional one left empty is left out, not sent as null).
  function nullableField(field, schema, name, required) {
    var id = nextId("null");
    var box = el("input", { type: "checkbox", id: id, class: "null", title: "Send " + fieldLabel(name, schema, required) + " as null" });
    var value = el("fieldset", { class: "nullable-value" }, field.node);
    function toggle(on) {
      box.checked = on;
      value.disabled = on;
    }
    box.addEventListener("change", function () { toggle(box.checked); });
    return {
      node: el("div", { class: "nullable" }, value, el("div", { class: "field field-check" }, box, el("label", { for: id, text: "null" }))),
      read: function () { return box.checked ? null : field.read(); },
      set: function (read, digits) {
        toggle(read === null);
        field.set(read === null ? undefined : read, digits);
      },
      typed: function () { return !box.checked && field.typed ? field.typed() : undefined; },
      pristine: field.pristine ? function () { return !box.checked && field.pristine(); } : undefined,
      rename: function (newName, newPath) {
        name = newName;
        field.rename(newName, newPath);
        box.title = "Send " + fieldLabel(name, schema, required) + " as null";
      },
      input: field.input,
      fields: field.fields,
    };
  }

  // The field of one value, its schema unwrapped (see buildField).
  function buildValueField(schema, name, required, root, path, answer) {
    var id = nextId("field");
    var hintId = id + "-hint";
    var label = fieldLabel(name, schema, required);
    var where = path || name;
    var type = schema.type;
    // rename(newName, newPath) of a field: its label and path change, update() shows them
    function renamer(update) {
      return function (newName, newPath) {
        name = newName;
        where = newPath;
        label = fieldLabel(name, schema, required);
        update();
      };
    }

    if (Array.isArray(schema.enum)) {
      var select = el("select", { id: id, name: where, "aria-describedby": schema.description ? hintId : null, required: required });
      if (!required) select.appendChild(el("option", { value: "", text: "(not set)" }));
      // an integer past 2^53 is shown, matched and sent with the digits the schema lists:
      // 9007199254740993 and ...992 are one JavaScript number
      var enumDigits = function (i) { return exactDigits(schema.enum, i); };
      var enumIndex = function (value, digits) {
        for (var i = 0; i < schema.enum.length; i += 1) {
          var listed = enumDigits(i);
          if (schema.enum[i] === value && (digits === undefined || listed === undefined || listed === digits)) return i;
        }
        return -1;
      };
      schema.enum.forEach(function (value, i) {
        var title = Array.isArray(schema.enumNames) && typeof schema.enumNames[i] === "string" ? schema.enumNames[i] : null;
        select.appendChild(el("option", { value: String(i), text: title !== null ? title : typeof value === "string" ? value : enumDigits(i) || compact(value) }));
      });
      if (schema.default !== undefined) {
        var index = enumIndex(schema.default, exactDigits(schema, "default"));
        if (index >= 0) select.value = String(index);
      }
      var selectLabel = el("label", { for: id, text: label });
      return {
        node: el("div", { class: "field" }, selectLabel, select, describe(schema, hintId)),
        read: function () {
          if (select.value === "") {
            if (required) throw missing(where);
            return undefined;
          }
          return schema.enum[Number(select.value)];
        },
        set: function (value, digits) { var i = enumIndex(value, digits); select.value = i >= 0 ? String(i) : ""; },
        typed: function () { return select.value === "" ? undefined : enumDigits(Number(select.value)); },
        rename: renamer(function () { select.name = where; selectLabel.textContent = label; }),
      };
    }

    if (type === "boolean") {
      var box = el("input", { type: "checkbox", id: id, name: where, "aria-describedby": schema.description ? hintId : null });
      var boxLabel = el("label", { for: id, text: label });
      // an optional one clicked can be left not set again (left out: the server's default);
      // without a default, not set shows as neither checked nor unchecked
      var unset = el("button", { type: "button", class: "unset", text: "Unset", title: "Leave " + label + " not set", hidden: true });
      var touched = false;
      var touch = function (value) {
        touched = value;
        unset.hidden = required || !touched;
        if (!touched) box.checked = schema.default === true;
        box.indeterminate = !required && !touched && typeof schema.default !== "boolean";
      };
      touch(false);
      box.addEventListener("change", function () { touch(true); });
      unset.addEventListener("click", function () { touch(false); box.focus(); });
      return {
        node: el("div", { class: "field field-check" }, box, boxLabel, unset, describe(schema, hintId)),
        read: function () { return required || touched || (answer && typeof schema.default === "boolean") ? box.checked : undefined; },
        set: function (value) {
          touch(value !== undefined);
          if (value !== undefined) box.checked = value === true;
        },
        pristine: function () { return !touched; },
        rename: renamer(function () {
          box.name = where;
          boxLabel.textContent = label;
          unset.title = "Leave " + label + " not set";
        }),
      };
    }

    if (type === "integer" || type === "number") {
      var number = el("input", {
        type: "number", id: id, name: where, required: required,
        step: type === "integer" ? (schema.multipleOf || 1) : "any",
        min: schema.minimum, max: schema.maximum,
        "aria-describedby": schema.description ? hintId : null,
      });
      if (schema.default !== undefined) number.value = exactDigits(schema, "default") || String(schema.default);
      var numberLabel = el("label", { for: id, text: label });
      return {
        node: el("div", { class: "field" }, numberLabel, number, describe(schema, hintId)),
        read: function () {
          if (number.value.trim() === "") {
            if (required) throw missing(where);
            return undefined;
          }
          var value = Number(number.value);
          if (!isFinite(value) || (type === "integer" && !Number.isInteger(value))) {
            throw new Error(where + " must be " + (type === "integer" ? "an integer" : "a number"));
          }
          return value;
        },
        set: function (value, digits) { number.value = value === undefined ? "" : digits || String(value); },
        typed: function () { return bigInteger(number.value); },
        rename: renamer(function () { number.name = where; numberLabel.textContent = label; }),
      };
    }

    if (type === "string") {
      var long = schema.format === undefined && (schema.maxLength === undefined || schema.maxLength > 200) && /text|body|content|markdown|description/i.test(name);
      var input = long
        ? el("textarea", { id: id, name: where, rows: 3, required: required })
        : el("input", { type: "text", id: id, name: where, required: required, minlength: schema.minLength, maxlength: schema.maxLength });
      if (schema.description) input.setAttribute("aria-describedby", hintId);
      if (schema.default !== undefined) input.value = String(schema.default);
      if (schema.format) input.setAttribute("placeholder", schema.format);
      var inputLabel = el("label", { for: id, text: label });
      return {
        node: el("div", { class: "field" }, inputLabel, input, describe(schema, hintId)),
        read: function () {
          if (input.value === "") {
            if (required) throw missing(where);
            return undefined;
          }
          return input.value;
        },
        set: function (value) { input.value = value === undefined ? "" : String(value); },
        rename: renamer(function () { input.name = where; inputLabel.textContent = label; }),
        input: input,
      };
    }

    if (type === "object" && schema.properties) {
      var requiredNames = schema.required || [];
      var fields = {};
      var legend = el("legend", { text: label });
      var fieldset = el("fieldset", { class: "object" }, legend, describe(schema, hintId));
      Object.keys(schema.properties).forEach(function (key) {
        var child = buildField(schema.properties[key], key, requiredNames.indexOf(key) >= 0, root, where ? where + "." + key : key, answer);
        fields[key] = child;
        fieldset.appendChild(child.node);
      });
      return {
        node: fieldset,
        // An optional object nothing was entered in is left out, its required fields too.
        read: function () {
          var value = {};
          var any = false;
          var problem = null;
          Object.keys(fields).forEach(function (key) {
            var read;
            try { read = fields[key].read(); } catch (error) { problem = problem || error; return; }
            if (read === undefined) return;
            put(value, key, fields[key], read);
            if (!(fields[key].pristine && fields[key].pristine())) any = true;
          });
          if (problem) {
            if (!required && !any && problem.empty) return undefined;
            if (any && problem.empty) throw new Error(problem.message); // begun, so not empty
            throw problem;
          }
          return any || required ? value : undefined;
        },
        set: function (value) {
          Object.keys(fields).forEach(function (key) { fields[key].set(value ? value[key] : undefined, exactDigits(value, key)); });
        },
        rename: renamer(function () {
          legend.textContent = label;
          Object.keys(fields).forEach(function (key) { fields[key].rename(key, where + "." + key); });
        }),
        fields: fields,
      };
    }

    if (type === "array" && schema.items && typeof schema.items === "object") {
      var items = [];
      var list = el("ol", { class: "array-items" });
      var arrayLegend = el("legend", { text: label });
      var addButton = el("button", { type: "button", class: "small" });
      var arrayFieldset = el("fieldset", { class: "array" }, arrayLegend, describe(schema, hintId), list, addButton);
      // The name and path of item i: numbered by its place in the list as it is now.
      function itemName(i) { return (schema.title || name) + " item " + (i + 1); }
      function itemPath(i) { return where + "[" + i + "]"; }
      // Name the array and its items again (after a removal, or when the array is renamed).
      function renumber() {
        arrayLegend.textContent = label;
        addButton.textContent = "Add item to " + (schema.title || name);
        items.forEach(function (entry, i) {
          entry.field.rename(itemName(i), itemPath(i));
          entry.remove.setAttribute("aria-label", "Remove " + itemName(i));
        });
      }
      function addItem(value, digits) {
        var item = buildField(schema.items, itemName(items.length), true, root, itemPath(items.length), answer);
        var row = el("li", { class: "array-item" }, item.node);
        var remove = el("button", { type: "button", class: "small", text: "Remove item", "aria-label": "Remove " + itemName(items.length) });
        var entry = { field: item, row: row, remove: remove };
        remove.addEventListener("click", function () {
          items.splice(items.indexOf(entry), 1);
          list.removeChild(row);
          renumber();
          addButton.focus();
        });
        row.appendChild(remove);
        items.push(entry);
        list.appendChild(row);
        if (value !== undefined) item.set(value, digits);
        return item;
      }
      addButton.addEventListener("click", function () {
        addItem();
        var focusable = list.lastChild.querySelector("input, select, textarea");
        if (focusable) focusable.focus();
      });
      renumber();
      function addItems(values) {
        (Array.isArray(values) ? values : []).forEach(function (value, i) { addItem(value, exactDigits(values, i)); });
      }
      addItems(schema.default);
      return {
        node: arrayFieldset,
        read: function () {
          var values = [];
          items.forEach(function (entry, i) { put(values, i, entry.field, entry.field.read()); });
          if (!values.length && !required) return undefined;
          return values;
        },
        pristine: function () { return !items.length; },
        set: function (value) {
          items.slice().forEach(function (entry) { list.removeChild(entry.row); });
          items = [];
          addItems(value);
        },
        rename: renamer(renumber),
      };
    }

    // Anything else (unions, free objects, tuples): JSON text.
    var area = el("textarea", { id: id, name: where, rows: 3, class: "json", required: required, "aria-describedby": hintId });
    if (schema.default !== undefined) area.value = exactDigits(schema, "default") || compact(schema.default);
    var areaLabel = el("label", { for: id, text: label + " (JSON)" });
    return {
      node: el("div", { class: "field" }, areaLabel, area,
        el("small", { class: "hint", id: hintId, text: (schema.description ? schema.description + " " : "") + "Enter a JSON value." })),
      read: function () {
        if (area.value.trim() === "") {
          if (required) throw missing(where);
          return undefined;
        }
        try { return parseJson(area.value); } catch (e) { throw new Error(where + " is not valid JSON: " + e.message); }
      },
      set: function (value, digits) { area.value = value === undefined ? "" : digits || compact(value); },
      typed: function () { return bigInteger(area.value); },
      rename: renamer(function () { area.name = where; areaLabel.textContent = label + " (JSON)"; }),
    };
  }

  // A form for an input schema with a raw JSON fallback: {node, read()}; answer: the form
  // answers an elicitation (see buildField).
  function argumentsForm(schema, title, answer) {
    schema = schema || { type: "object", properties: {} };
    var properties = schema.properties || {};
    var requiredNames = schema.required || [];
    var fields = {};
    var box = el("div", { class: "fields" });
    Object.keys(properties).forEach(function (key) {
      var field = buildField(properties[key], key, requiredNames.indexOf(key) >= 0, schema, key, answer);
      fields[key] = field;
      box.appendChild(field.node);
    });
    if (!Object.keys(properties).length) box.appendChild(el("p", { class: "muted", text: "No arguments." }));
    var rawId = nextId("raw");
    var raw = el("textarea", { id: rawId, rows: 6, class: "json", name: "raw-arguments" });
    var rawToggle = el("input", { type: "checkbox", id: rawId + "-on" });
    var rawBox = el("div", { class: "field", hidden: true }, el("label", { for: rawId, text: (title || "Arguments") + " as JSON" }), raw);
    // lenient: a field that is empty or wrong is left out (the raw JSON starts from the rest)
    function readFields(lenient) {
      var value = {};
      Object.keys(fields).forEach(function (key) {
        var read;
        try { read = fields[key].read(); } catch (error) { if (!lenient) throw error; }
        if (read !== undefined) put(value, key, fields[key], read);
      });
      return value;
    }
    rawToggle.addEventListener("change", function () {
      if (rawToggle.checked) {
        raw.value = pretty(readFields(true));
        rawBox.hidden = false;
        box.hidden = true;
      } else {
        try {
          var parsed = parseJson(raw.value || "{}");
          Object.keys(fields).forEach(function (key) { fields[key].set(parsed[key], exactDigits(parsed, key)); });
        } catch (e) { /* keep the fields as they were */ }
        rawBox.hidden = true;
        box.hidden = false;
      }
    });
    return {
      node: el("div", { class: "arguments" }, box,
        el("div", { class: "field field-check" }, rawToggle, el("label", { for: rawId + "-on", text: "Edit as raw JSON" })), rawBox),
      read: function () {
        if (!rawToggle.checked) return readFields();
        var parsed;
        try { parsed = parseJson(raw.value || "{}"); } catch (e) { throw new Error("The raw JSON is not valid: " + e.message); }
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("The raw JSON must be an object");
        return parsed;
      },
      fields: fields,
    };
  }

  // -- a small JSON Schema check of structuredContent -------------------------------------------

  function typeOf(value) {
    if (value === null) return "null";
    if (Array.isArray(value)) return "array";
    if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
    return typeof value;
  }

  // The keywords most output schemas use: type, enum, const, required, properties,
  // additionalProperties, items, minimum/maximum, minLength/maxLength, anyOf/oneOf/allOf, $ref.
  function validate(schema, value, root, path, errors) {
    schema = resolve(schema, root);
    if (schema === true || !schema || typeof schema !== "object") return errors;
    var actual = typeOf(value);
    if (schema.type !== undefined) {
      var types = Array.isArray(schema.type) ? schema.type : [schema.type];
      var ok = types.some(function (type) { return type === actual || (type === "number" && actual === "integer"); });
      if (!ok) { errors.push(path + ": expected " + types.join(" or ") + ", got " + actual); return errors; }
    }
    if (Array.isArray(schema.enum) && !schema.enum.some(function (option) { return JSON.stringify(option) === JSON.stringify(value); })) {
      errors.push(path + ": not one of " + JSON.stringify(schema.enum));
    }
    if (schema.const !== undefined && JSON.stringify(schema.const) !== JSON.stringify(value)) errors.push(path + ": must be " + JSON.stringify(schema.const));
    if (actual === "object") {
      (schema.required || []).forEach(function (key) { if (!(key in value)) errors.push(path + ": missing " + key); });
      var properties = schema.properties || {};
      Object.keys(value).forEach(function (key) {
        if (properties[key] !== undefined) validate(properties[key], value[key], root, path + "." + key, errors);
        else if (schema.additionalProperties === false) errors.push(path + ": unexpected property " + key);
        else if (schema.additionalProperties && typeof schema.additionalProperties === "object") validate(schema.additionalProperties, value[key], root, path + "." + key, errors);
      });
    }
    if (actual === "array" && schema.items && typeof schema.items === "object" && !Array.isArray(schema.items)) {
      value.forEach(function (item, i) { validate(schema.items, item, root, path + "[" + i + "]", errors); });
    }
    if ((actual === "number" || actual === "integer")) {
      if (schema.minimum !== undefined && value < schema.minimum) errors.push(path + ": below " + schema.minimum);
      if (schema.maximum !== undefined && value > schema.maximum) errors.push(path + ": above " + schema.maximum);
    }
    if (actual === "string") {
      if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(path + ": shorter than " + schema.minLength);
      if (schema.maxLength !== undefined && value.length > schema.maxLength) errors.push(path + ": longer than " + schema.maxLength);
    }
    if (Array.isArray(schema.allOf)) schema.allOf.forEach(function (part) { validate(part, value, root, path, errors); });
    var choices = schema.anyOf || schema.oneOf;
    if (Array.isArray(choices) && !choices.some(function (part) { return validate(part, value, root, path, []).length === 0; })) {
      errors.push(path + ": matches none of the schema's alternatives");
    }
    return errors;
  }

  // -- rendering results ---------------------------------------------------------------------

  // The bytes of a base64 text, or null when it is not base64.
  function base64Bytes(text) {
    var binary;
    try { binary = atob(String(text).replace(/\s+/g, "")); } catch (e) { return null; }
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function formatSize(count) {
    if (count < 1024) return count + (count === 1 ? " byte" : " bytes");
    if (count < 1024 * 1024) return (count / 1024).toFixed(1) + " KiB (" + count + " bytes)";
    return (count / 1024 / 1024).toFixed(1) + " MiB (" + count + " bytes)";
  }

  // The name a download of the resource `uri` gets: the last segment of its path.
  function fileName(uri) {
    var path = String(uri || "").split(/[?#]/)[0];
    var last = path.slice(path.lastIndexOf("/") + 1);
    try { last = decodeURIComponent(last); } catch (e) { /* keep it encoded */ }
    return last.replace(/[\\/:*?"<>|\x00-\x1f]/g, "_") || "resource";
  }

  // The blob of resource contents (embedded in a result, or read): an image, audio or
  // video when its mimeType says so, anything else a download with its size.
  function renderBlob(item) {
    var mimeType = item.mimeType || "application/octet-stream";
    var bytes = base64Bytes(item.blob);
    if (bytes === null) return el("p", { class: "error-text", text: item.uri + ": its blob is not valid base64" });
    var source = "data:" + mimeType + ";base64," + String(item.blob).replace(/\s+/g, "");
    var kind = mimeType.split("/")[0].toLowerCase();
    if (kind === "image") return el("img", { src: source, alt: "Image " + item.uri + " (" + mimeType + ")" });
    if (kind === "audio") return el("audio", { controls: true, src: source, "aria-label": "Audio " + item.uri });
    if (kind === "video") return el("video", { controls: true, src: source, "aria-label": "Video " + item.uri });
    var name = fileName(item.uri);
    var link = el("a", { class: "blob-download", href: URL.createObjectURL(new Blob([bytes], { type: mimeType })), download: name, text: "Download " + name });
    return el("p", { class: "download" }, link, " (" + mimeType + ", " + formatSize(bytes.length) + ")");
  }

  function renderContent(blocks) {
    var box = el("div", { class: "content" });
    (blocks || []).forEach(function (block) {
      if (block.type === "text") box.appendChild(el("pre", { class: "text-block", text: block.text }));
      else if (block.type === "image") box.appendChild(el("img", { src: "data:" + block.mimeType + ";base64," + block.data, alt: "Image result (" + block.mimeType + ")" }));
      else if (block.type === "audio") box.appendChild(el("audio", { controls: true, src: "data:" + block.mimeType + ";base64," + block.data, "aria-label": "Audio result" }));
      else if (block.type === "resource_link") box.appendChild(el("p", { text: "Resource link: " + block.uri + (block.name ? " (" + block.name + ")" : "") }));
      else if (block.type === "resource" && block.resource) {
        box.appendChild(el("p", { text: "Embedded resource " + block.resource.uri }));
        if (block.resource.text !== undefined) box.appendChild(el("pre", { text: block.resource.text }));
        else if (block.resource.blob !== undefined) box.appendChild(renderBlob(block.resource));
        else box.appendChild(el("pre", { text: pretty(block.resource) }));
      } else box.appendChild(el("pre", { text: pretty(block) }));
    });
    return box;
  }

  function renderResourceContents(contents) {
    var box = el("div", { class: "content" });
    (contents || []).forEach(function (item) {
      box.appendChild(el("p", { class: "muted", text: item.uri + (item.mimeType ? " · " + item.mimeType : "") }));
      if (item.text !== undefined) box.appendChild(el("pre", { class: "text-block", text: item.text }));
      else if (item.blob !== undefined) box.appendChild(renderBlob(item));
    });
    return box;
  }

  // The URL a URL-mode elicitation asks the user to open: a link when it is http(s),
  // shown in full (the user examines it before opening it), and never opened by the page.
  function urlToOpen(url) {
    var text = String(url);
    if (!/^https?:\/\//i.test(text)) return el("code", { class: "url", text: text + " (not an http(s) URL: not opened)" });
    return el("a", { href: text, target: "_blank", rel: "noopener noreferrer", text: text });
  }

  // The URL-mode elicitations shown, by elicitationId: what to do when the server says one
  // is complete (notifications/elicitation/complete, 2025-11-25). An unknown or already
  // completed id is ignored, as the spec requires.
  var urlElicitations = {};

  function elicitationComplete(params) {
    var id = params.elicitationId;
    if (typeof id !== "string" || !Object.prototype.hasOwnProperty.call(urlElicitations, id)) return;
    var waiting = urlElicitations[id];
    delete urlElicitations[id];
    waiting.forEach(function (onComplete) { onComplete(); });
  }

  // The line saying whether the server said the URL elicitation `id` is complete.
  function completionStatus(id, onComplete) {
    var status = el("p", { class: "muted elicitation-status", text: "Not completed yet (the server tells when it is)." });
    (urlElicitations[id] = urlElicitations[id] || []).push(function () {
      status.className = "ok-text elicitation-status";
      status.textContent = "Completed: the server says the interaction at this page is done.";
      if (onComplete) onComplete();
    });
    return status;
  }

  // A request that needs URL-mode elicitations first (-32042, 2025-11-25): the pages to
  // open and their messages, as an elicitation asks them. Once the server said each one is
  // complete, retry (when given) is offered as a button.
  function urlElicitationBox(error, retry) {
    var box = el("div", { class: "question url-elicitations", role: "alert" },
      el("h4", { text: "The server asks you to open " + (error.data.elicitations.length === 1 ? "a page" : "pages") + " first" }),
      el("p", { class: "message", text: error.message }));
    var again = el("button", { type: "button", class: "retry", text: "Try again", hidden: true });
    var pending = 0;
    var untracked = false;
    error.data.elicitations.forEach(function (elicitation) {
      if (!elicitation || typeof elicitation !== "object") return;
      box.appendChild(el("p", { class: "message", text: elicitation.message || "" }));
      box.appendChild(el("p", {}, "Open ", urlToOpen(elicitation.url), " and come back."));
      if (typeof elicitation.elicitationId !== "string") { untracked = true; return; }
      pending += 1;
      box.appendChild(completionStatus(elicitation.elicitationId, function () {
        pending -= 1;
        if (!pending && !untracked && retry) again.hidden = false;
      }));
    });
    box.appendChild(el("p", { class: "muted", text: "Then try again (error " + error.code + ", URL elicitation required)." }));
    if (retry) {
      again.addEventListener("click", retry);
      box.appendChild(el("div", { class: "buttons" }, again));
    }
    return box;
  }

  // retry: how to send the request again, for an error that says it may be retried.
  function errorBox(error, retry) {
    if (error.code === URL_ELICITATION_REQUIRED && error.data && Array.isArray(error.data.elicitations)) return urlElicitationBox(error, retry);
    return el("div", { class: "error", role: "alert" },
      el("strong", { text: "Error" + (error.code !== undefined ? " " + error.code : "") + ": " }),
      error.message,
      error.data !== undefined ? el("pre", { text: pretty(error.data) }) : null);
  }

  // -- state of the page ---------------------------------------------------------------------

  var client = null;
  var resourcesByUri = {};
  var activeCall = null;

  // -- answering the server's questions ------------------------------------------------------

  // The panel of the call that asked, or the status line's neighbour when nothing runs.
  function questionArea(call) {
    return (call && call.questions) || $("server-info");
  }

  function elicit(params, call, ticket) {
    return new Promise(function (resolvePromise) {
      var area = questionArea(call);
      var form = el("form", { class: "question", "aria-label": "Elicitation", novalidate: true });
      form.appendChild(el("h4", { text: "The server asks" }));
      form.appendChild(el("p", { class: "message", text: params.message || "" }));
      var fields = null;
      var status = null;
      if (params.mode === "url") {
        form.appendChild(el("p", {}, "Open ", urlToOpen(params.url), " and come back."));
        if (typeof params.elicitationId === "string") status = form.appendChild(completionStatus(params.elicitationId));
      } else {
        fields = argumentsForm(params.requestedSchema || { type: "object", properties: {} }, "Answer", true);
        form.appendChild(fields.node);
      }
      var errors = el("p", { class: "error-text", role: "alert" });
      function done(result) {
        // a form taken off the page (withdrawn, its call over) answers nothing
        if (!form.parentNode) return;
        if (status && result.action === "accept") {
          // the page to open stays, to show when the server says its interaction is done
          form.parentNode.replaceChild(el("div", { class: "question url-elicitation" },
            el("h4", { text: "The server asked you to open a page" }),
            el("p", { class: "message", text: params.message || "" }),
            el("p", {}, "Open ", urlToOpen(params.url), " and come back."), status), form);
        } else form.remove();
        resolvePromise(result);
      }
      var accept = el("button", { type: "submit", text: "Accept" });
      var decline = el("button", { type: "button", text: "Decline" });
      var cancel = el("button", { type: "button", text: "Cancel" });
      decline.addEventListener("click", function () { done({ action: "decline" }); });
      cancel.addEventListener("click", function () { done({ action: "cancel" }); });
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        try {
          var result = { action: "accept" };
          if (fields) result.content = fields.read();
          done(result);
        } catch (error) { errors.textContent = error.message; }
      });
      form.appendChild(errors);
      form.appendChild(el("div", { class: "buttons" }, accept, decline, cancel));
      area.appendChild(form);
      ticket.form = form;
      var first = form.querySelector("input, select, textarea, button");
      if (first) first.focus();
    });
  }

  function sample(params, call, ticket) {
    return new Promise(function (resolvePromise, reject) {
      var area = questionArea(call);
      var id = nextId("sample");
      var form = el("form", { class: "question", "aria-label": "Sampling request" });
      form.appendChild(el("h4", { text: "The server asks for a completion (sampling/createMessage)" }));
      form.appendChild(el("pre", { text: pretty(params.messages || []) }));
      var text = el("textarea", { id: id, rows: 3 });
      text.value = "A stub answer from the Flask-MCP explorer.";
      var model = el("input", { type: "text", id: id + "-model", value: "explorer-stub" });
      form.appendChild(el("div", { class: "field" }, el("label", { for: id, text: "Answer text" }), text));
      form.appendChild(el("div", { class: "field" }, el("label", { for: id + "-model", text: "Model name" }), model));
      var send = el("button", { type: "submit", text: "Send answer" });
      var refuse = el("button", { type: "button", text: "Refuse" });
      // false for a form taken off the page (withdrawn, its call over): it answers nothing
      function done() { var shown = !!form.parentNode; form.remove(); return shown; }
      refuse.addEventListener("click", function () { if (done()) reject(RpcError({ code: -1, message: "The user refused the sampling request" })); });
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        if (!done()) return;
        resolvePromise({ role: "assistant", content: { type: "text", text: text.value }, model: model.value, stopReason: "endTurn" });
      });
      form.appendChild(el("div", { class: "buttons" }, send, refuse));
      area.appendChild(form);
      ticket.form = form;
      text.focus();
    });
  }

  function listRoots(params, call, ticket) {
    return new Promise(function (resolvePromise) {
      var area = questionArea(call);
      var id = nextId("roots");
      var form = el("form", { class: "question", "aria-label": "Roots request" });
      form.appendChild(el("h4", { text: "The server asks for the client's roots (roots/list)" }));
      var text = el("textarea", { id: id, rows: 3, class: "json" });
      text.value = JSON.stringify([{ uri: "file:///tmp/explorer", name: "explorer" }]);
      var errors = el("p", { class: "error-text", role: "alert" });
      form.appendChild(el("div", { class: "field" }, el("label", { for: id, text: "Roots (JSON list)" }), text));
      form.appendChild(errors);
      form.appendChild(el("div", { class: "buttons" }, el("button", { type: "submit", text: "Send roots" })));
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        var roots;
        try { roots = JSON.parse(text.value); } catch (e) { errors.textContent = "Not valid JSON: " + e.message; return; }
        if (!Array.isArray(roots)) { errors.textContent = "Enter a JSON list of {uri, name} objects."; return; }
        if (!form.parentNode) return; // taken off the page: it answers nothing
        form.remove();
        resolvePromise({ roots: roots });
      });
      area.appendChild(form);
      ticket.form = form;
      text.focus();
    });
  }

  var HANDLERS = {
    "elicitation/create": elicit,
    "sampling/createMessage": sample,
    "roots/list": listRoots,
  };

  // -- MCP App views (the host side) -------------------------------------------------------------

  function toolViewUri(tool) {
    var meta = tool && tool._meta;
    if (!meta) return null;
    return (meta.ui && meta.ui.resourceUri) || meta["ui/resourceUri"] || null;
  }

  function visibility(tool) {
    return (tool && tool._meta && tool._meta.ui && tool._meta.ui.visibility) || ["model", "app"];
  }

  function decodeHtml(content) {
    if (content.text !== undefined) return content.text;
    var binary = atob(content.blob || "");
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return new TextDecoder().decode(bytes);
  }

  // Render a tool's view: read it, frame the sandbox proxy with the view's CSP, and speak
  // the host side of the protocol. Returns {setResult, cancelled, teardown}.
  function ViewHost(tool, args, container, viewLog) {
    this.tool = tool;
    this.args = args;
    this.container = container;
    this.viewLog = viewLog;
    this.initialized = false;
    this.pendingResult = null;
    this.pendingCancel = null;
    this.iframe = null;
    this.requests = {};
    this.ids = 0;
    this.onMessage = this.onMessage.bind(this);
    // the questions of the view's own requests, shown under it (not on the Server tab);
    // leaving its panel dismisses them, as it does a call's (leave)
    this.questions = el("div", { class: "questions view-questions", "data-asks": "" });
    var questions = this.questions;
    this.gone = new Promise(function (resolvePromise) {
      questions.supersede = function () { questions.superseded = true; resolvePromise(); };
    });
  }

  // The call of one of the view's own requests: its questions go under the view.
  ViewHost.prototype.call = function (abort) {
    var call = { questions: this.questions, whenSuperseded: this.gone, superseded: !!this.questions.superseded };
    if (abort) call.abort = abort;
    return call;
  };

  ViewHost.prototype.log = function (text) {
    this.viewLog.appendChild(el("li", { text: text }));
  };

  ViewHost.prototype.open = function () {
    var self = this;
    var uri = toolViewUri(this.tool);
    return client.request("resources/read", { uri: uri }).then(function (read) {
      var content = (read.contents || [])[0];
      if (!content) throw new Error(uri + ": resources/read returned no content");
      if (content.mimeType !== APP_MIME) throw new Error(uri + ": mime type " + content.mimeType + ", not " + APP_MIME);
      var listed = resourcesByUri[uri];
      var ui = (content._meta && content._meta.ui) || (listed && listed._meta && listed._meta.ui) || {};
      self.ui = ui;
      var url = new URL(CONFIG.sandbox, location.href);
      // The specification wants the proxy on another origin than the page's: on the page's
      // own, allow-same-origin would let it reach the page. It runs on an opaque one then.
      var ownOrigin = CONFIG.sandboxSameOrigin && url.origin !== location.origin;
      if (CONFIG.sandboxSameOrigin && !ownOrigin) self.log("The sandbox origin is this page's: the proxy runs on an opaque origin");
      if (ui.csp) url.searchParams.set("csp", JSON.stringify(ui.csp));
      self.log("CSP asked by the view: " + (ui.csp ? JSON.stringify(ui.csp) : "none (restrictive default)"));
      var iframe = el("iframe", {
        class: "view-frame" + (ui.prefersBorder === false ? "" : " bordered"),
        title: "MCP App view of " + self.tool.name,
        sandbox: ownOrigin ? "allow-scripts allow-same-origin allow-forms" : "allow-scripts allow-forms",
      });
      var allow = [];
      var permissions = ui.permissions || {};
      if (permissions.camera) allow.push("camera");
      if (permissions.microphone) allow.push("microphone");
      if (permissions.geolocation) allow.push("geolocation");
      if (permissions.clipboardWrite) allow.push("clipboard-write");
      if (allow.length) iframe.setAttribute("allow", allow.join("; "));
      self.log("Permissions asked by the view: " + (allow.length ? allow.join(", ") : "none"));
      if (ui.domain) self.log("Sandbox domain asked by the view: " + ui.domain + " (host-specific; the explorer uses its own sandbox origin)");
      self.iframe = iframe;
      self.target = ownOrigin ? url.origin : "*";
      window.addEventListener("message", self.onMessage);
      self.html = decodeHtml(content);
      iframe.src = url.href;
      self.container.appendChild(iframe);
      self.container.appendChild(self.questions);
      return new Promise(function (resolvePromise, reject) {
        self.ready = resolvePromise;
        setTimeout(function () { reject(new Error("the sandbox proxy did not start within " + WAIT_MS / 1000 + " s")); }, WAIT_MS);
      });
    });
  };

  ViewHost.prototype.post = function (message) {
    if (this.iframe && this.iframe.contentWindow) this.iframe.contentWindow.postMessage(message, this.target);
  };

  ViewHost.prototype.answer = function (id, promise) {
    var self = this;
    Promise.resolve().then(promise).then(
      function (result) { self.post({ jsonrpc: "2.0", id: id, result: result || {} }); },
      function (error) { self.post({ jsonrpc: "2.0", id: id, error: { code: typeof error.code === "number" ? error.code : -32000, message: error.message } }); }
    );
  };

  ViewHost.prototype.hostContext = function () {
    return {
      toolInfo: { tool: this.tool },
      theme: window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light",
      displayMode: "inline",
      availableDisplayModes: ["inline"],
      containerDimensions: { maxHeight: 900 },
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: CLIENT_INFO.name,
      platform: "web",
      deviceCapabilities: { touch: false, hover: true },
    };
  };

  ViewHost.prototype.onMessage = function (event) {
    if (!this.iframe || event.source !== this.iframe.contentWindow) return;
    var message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    var self = this;
    if (message.method === "ui/notifications/sandbox-proxy-ready") {
      this.post({ jsonrpc: "2.0", method: "ui/notifications/sandbox-resource-ready", params: { html: this.html, csp: this.ui.csp || {}, permissions: this.ui.permissions || {} } });
      if (this.ready) this.ready();
      return;
    }
    if (message.method === undefined) {
      var waiting = this.requests[message.id];
      if (waiting) { delete this.requests[message.id]; waiting(message); }
      return;
    }
    var params = message.params || {};
    if (message.id === undefined) {
      if (message.method === "ui/notifications/initialized") {
        this.initialized = true;
        this.log("view initialized");
        this.post({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: this.args } });
        if (this.pendingResult) this.sendResult(this.pendingResult);
        if (this.pendingCancel !== null) this.sendCancelled(this.pendingCancel);
      } else if (message.method === "ui/notifications/size-changed") {
        if (typeof params.height === "number") this.iframe.style.height = Math.min(Math.max(params.height, 40), 900) + "px";
      } else if (message.method === "notifications/message") {
        this.log("view log " + params.level + ": " + JSON.stringify(params.data));
      }
      return;
    }
    switch (message.method) {
      case "ui/initialize":
        this.log("ui/initialize from " + JSON.stringify(params.appInfo || {}));
        this.answer(message.id, function () {
          return {
            protocolVersion: APPS_PROTOCOL,
            hostInfo: { name: CLIENT_INFO.name, version: CLIENT_INFO.version },
            hostCapabilities: {
              serverTools: {}, serverResources: {}, logging: {},
              sandbox: { csp: self.ui.csp || {}, permissions: self.ui.permissions || {} },
            },
            hostContext: self.hostContext(),
          };
        });
        break;
      case "tools/call":
        this.answer(message.id, function () {
          var tool = client.tools[params.name];
          if (!tool || visibility(tool).indexOf("app") < 0) {
            self.log("refused the view's call to " + params.name);
            throw RpcError({ code: -32602, message: "The view may not call " + params.name + ": its visibility leaves out \"app\", or it is not a tool of this server" });
          }
          self.log("view calls " + params.name + " " + JSON.stringify(params.arguments || {}));
          var forwarded = { name: params.name, arguments: params.arguments || {} };
          var support = taskSupport(tool);
          var calling = support === "required" || support === "server"
            ? client.callAsTask(forwarded, self.call(new AbortController()), function (task) { self.log("task " + task.taskId + ": " + task.status); })
            : client.request("tools/call", forwarded, self.call());
          return calling.then(function (result) {
            self.log("→ " + params.name + " answered" + (result.isError ? " with an error" : ""));
            return result;
          });
        });
        break;
      case "resources/read":
        this.answer(message.id, function () { return client.request("resources/read", { uri: params.uri }, self.call()); });
        break;
      case "ping":
        this.answer(message.id, function () { return {}; });
        break;
      case "ui/request-display-mode":
        this.answer(message.id, function () { return { mode: "inline" }; });
        break;
      case "ui/message":
        this.log("the view adds a message: " + JSON.stringify(params.content));
        this.answer(message.id, function () { return {}; });
        break;
      case "ui/update-model-context":
        this.log("the view updates the model context: " + JSON.stringify(params));
        this.answer(message.id, function () { return {}; });
        break;
      case "ui/open-link":
        this.log("the view asks to open " + params.url + " (not opened by the explorer)");
        this.answer(message.id, function () { throw RpcError({ code: -32000, message: "The explorer does not open links; the URL is in its log" }); });
        break;
      default:
        this.answer(message.id, function () { throw RpcError({ code: -32601, message: "The explorer does not handle " + message.method }); });
    }
  };

  ViewHost.prototype.sendResult = function (result) {
    this.post({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: result });
  };

  ViewHost.prototype.sendCancelled = function (reason) {
    this.post({ jsonrpc: "2.0", method: "ui/notifications/tool-cancelled", params: { reason: reason } });
  };

  ViewHost.prototype.setResult = function (result) {
    if (this.initialized) this.sendResult(result);
    else this.pendingResult = result;
  };

  ViewHost.prototype.cancelled = function (reason) {
    if (this.initialized) this.sendCancelled(reason);
    else this.pendingCancel = reason;
  };

  ViewHost.prototype.teardown = function () {
    var self = this;
    if (!this.iframe) return Promise.resolve();
    var done = Promise.resolve();
    if (this.initialized) {
      this.ids += 1;
      var id = "teardown-" + this.ids;
      done = new Promise(function (resolvePromise) {
        self.requests[id] = resolvePromise;
        self.post({ jsonrpc: "2.0", id: id, method: "ui/resource-teardown", params: { reason: "the explorer shows another call" } });
        setTimeout(resolvePromise, 2000);
      });
    }
    return done.then(function () {
      window.removeEventListener("message", self.onMessage);
      if (self.iframe && self.iframe.parentNode) self.iframe.parentNode.removeChild(self.iframe);
      self.iframe = null;
    });
  };

  // -- sections ---------------------------------------------------------------------------------

  function showSection(name) {
    Array.prototype.forEach.call(document.querySelectorAll(".tab"), function (tab) {
      tab.setAttribute("aria-pressed", tab.getAttribute("data-section") === name ? "true" : "false");
    });
    Array.prototype.forEach.call(document.querySelectorAll(".section"), function (section) {
      section.hidden = section.id !== "section-" + name;
    });
  }

  function renderServer(result) {
    var info = client.serverInfo();
    var capabilities = result.capabilities || {};
    var extensions = capabilities.extensions || {};
    var box = clear($("server-info"));
    box.appendChild(el("dl", { class: "facts" },
      el("dt", { text: "Name" }), el("dd", { id: "server-name", text: (info.title ? info.title + " · " : "") + (info.name || "?") + " " + (info.version || "") }),
      el("dt", { text: "Protocol" }), el("dd", { id: "server-protocol", text: client.stateless ? (result.supportedVersions || [client.version]).join(", ") + " (stateless)" : (client.negotiated || "?") + " · session " + (client.sessionId || "none") }),
      info.description ? [el("dt", { text: "Description" }), el("dd", { text: info.description })] : null,
      el("dt", { text: "Extensions" }), el("dd", { id: "server-extensions", text: Object.keys(extensions).join(", ") || "none" })));
    box.appendChild(el("h3", { text: "Instructions" }));
    box.appendChild(el("pre", { id: "server-instructions", class: "text-block", text: result.instructions || "(none)" }));
    box.appendChild(el("h3", { text: "Capabilities" }));
    box.appendChild(el("pre", { id: "server-capabilities", text: pretty(capabilities) }));
  }

  // A request made in a panel (a tool's call and its view's requests, a read, a prompt)
  // goes on when the user opens something else there, its answer dropped with the panel:
  // its questions, which nobody can see any more, are dismissed at once (as those of a
  // request a newer one replaced: an elicitation cancelled, other questions refused), so
  // that the server does not wait for them.
  function leave(panel) {
    Array.prototype.forEach.call(panel.querySelectorAll("[data-asks]"), function (node) {
      if (node.supersede) node.supersede();
    });
    return clear(panel);
  }

  function supersedable(node, call) {
    node.setAttribute("data-asks", "");
    if (node.supersede) node.supersede();
    call.whenSuperseded = new Promise(function (resolvePromise) {
      node.supersede = function () { call.superseded = true; resolvePromise(); };
    });
  }

  function listButton(text, detail, onOpen) {
    var button = el("button", { type: "button", class: "item" }, el("span", { class: "item-name", text: text }), detail ? el("span", { class: "item-detail", text: detail }) : null);
    button.addEventListener("click", function () {
      Array.prototype.forEach.call(button.closest("ul").querySelectorAll("button.item"), function (other) { other.removeAttribute("aria-current"); });
      button.setAttribute("aria-current", "true");
      onOpen();
    });
    return el("li", {}, button);
  }

  // -- tools --------------------------------------------------------------------------------------

  function annotationBadges(tool) {
    var annotations = tool.annotations || {};
    var badges = el("ul", { class: "badges", "aria-label": "Annotations" });
    Object.keys(annotations).forEach(function (key) {
      if (key === "title") return;
      badges.appendChild(el("li", { text: key + ": " + JSON.stringify(annotations[key]) }));
    });
    var seen = visibility(tool);
    if (toolViewUri(tool)) badges.appendChild(el("li", { class: "badge-ui", text: "view: " + toolViewUri(tool) }));
    if (seen.indexOf("model") < 0) badges.appendChild(el("li", { class: "badge-ui", text: "app only" }));
    if (tool.execution && tool.execution.taskSupport) badges.appendChild(el("li", { text: "tasks: " + tool.execution.taskSupport }));
    return badges.childNodes.length ? badges : null;
  }

  // The server's tools, as its last tools/list gave them: the map forgets a removed tool,
  // which neither the page nor a view may call any more.
  function renderTools(tools) {
    var list = clear($("tool-list"));
    client.tools = {};
    tools.forEach(function (tool) {
      client.tools[tool.name] = tool;
      var title = tool.title || (tool.annotations && tool.annotations.title);
      list.appendChild(listButton(title || tool.name, title && title !== tool.name ? tool.name : null, function () { openTool(tool); }));
    });
    if (!tools.length) list.appendChild(el("li", { class: "muted", text: "No tools." }));
    var form = $("tool-form");
    var open = form && form.getAttribute("data-tool");
    if (open && !client.tools[open]) {
      form.setAttribute("data-removed", "");
      $("call-tool").disabled = true;
      form.querySelector(".error-text").textContent = "The server removed " + open + " (its tool list changed): it can no longer be called.";
    }
  }

  function openTool(tool) {
    var detail = leave($("tool-detail"));
    detail.appendChild(el("h3", { id: "tool-heading", text: tool.title || tool.name }));
    if (tool.title && tool.title !== tool.name) detail.appendChild(el("p", { class: "muted", text: tool.name }));
    if (tool.description) detail.appendChild(el("p", { class: "description", text: tool.description }));
    append(detail, annotationBadges(tool));
    var form = argumentsForm(tool.inputSchema, "Arguments");
    var formNode = el("form", { id: "tool-form", "data-tool": tool.name, "aria-labelledby": "tool-heading", novalidate: true }, form.node);
    var errors = el("p", { class: "error-text", role: "alert" });
    var callButton = el("button", { type: "submit", id: "call-tool", text: "Call " + tool.name });
    var cancelButton = el("button", { type: "button", id: "cancel-call", text: "Cancel", disabled: true });
    var copyCurl = el("button", { type: "button", id: "copy-curl", text: "Copy as curl" });
    var copyFlask = el("button", { type: "button", id: "copy-flask", text: "Copy as flask mcp call" });
    var copyOutput = el("textarea", { id: "copy-output", rows: 4, readonly: true, hidden: true, "aria-label": "Command to copy" });
    var support = taskSupport(tool);
    var asTask = el("input", { type: "checkbox", id: "as-task", checked: support === "required" || support === "server", disabled: support === "required" });
    if (support !== "forbidden") {
      var label = { required: "Run as a task (the tool requires it)", optional: "Run as a task",
        server: "Run as a task if the server chooses to (declare the tasks extension)" }[support];
      formNode.appendChild(el("div", { class: "field field-check" }, asTask, el("label", { for: "as-task", text: label })));
    }
    formNode.appendChild(errors);
    formNode.appendChild(el("div", { class: "buttons" }, callButton, cancelButton, copyCurl, copyFlask));
    detail.appendChild(formNode);
    detail.appendChild(copyOutput);
    var run = el("div", { id: "call-run", class: "run", "aria-live": "polite" });
    detail.appendChild(run);

    function readArguments() {
      errors.textContent = "";
      try { return form.read(); } catch (error) { errors.textContent = error.message; return null; }
    }

    copyCurl.addEventListener("click", function () {
      var args = readArguments();
      if (args === null) return;
      var params = { name: tool.name, arguments: args };
      if (client.stateless) params._meta = client.meta(asTask.checked);
      else if (asTask.checked) params.task = {};
      copyText(asCurl(client, { jsonrpc: "2.0", id: 1, method: "tools/call", params: params }), copyOutput);
    });
    copyFlask.addEventListener("click", function () {
      var args = readArguments();
      if (args !== null) copyText(asFlaskCall(tool.name, args), copyOutput);
    });
    cancelButton.addEventListener("click", function () {
      if (activeCall) activeCall.cancel("cancelled in the explorer");
    });
    formNode.addEventListener("submit", function (event) {
      event.preventDefault();
      if (formNode.hasAttribute("data-removed")) return;
      var args = readArguments();
      if (args === null) return;
      callTool(tool, args, run, callButton, cancelButton, asTask.checked);
    });
  }

  // Whether a call of the tool may run as a task. 2025-11-25: its execution.taskSupport,
  // "forbidden" (the default), "optional" or "required". 2026-07-28 lists no such thing (the
  // tasks extension lets the server decide per call): "server" when it offers the extension.
  function taskSupport(tool) {
    if (client && client.stateless) return client.runsTasks() ? "server" : "forbidden";
    return (tool && tool.execution && tool.execution.taskSupport) || "forbidden";
  }

  var progressTokens = 0;
  var currentView = null;

  function callTool(tool, args, run, callButton, cancelButton, asTask) {
    clear(run);
    var progress = el("progress", { id: "call-progress", max: 1, "aria-label": "Progress of " + tool.name });
    var progressText = el("span", { id: "call-progress-text", class: "muted" });
    var logs = el("ol", { id: "call-logs", class: "logs", "aria-label": "Log messages" });
    var questions = el("div", { id: "call-questions", class: "questions" });
    var outcome = el("div", { id: "call-outcome" });
    var viewBox = el("div", { id: "call-view", class: "view" });
    var viewLog = el("ol", { id: "view-log", class: "logs", "aria-label": "View messages" });
    var exchange = el("ol", { id: "call-exchange", class: "exchange" });
    var state = el("p", { id: "call-state", class: "state", text: "running" });
    run.appendChild(el("h4", { text: "Call" }));
    run.appendChild(state);
    var taskId = el("code", { id: "call-task-id" });
    var taskStatus = el("span", { id: "call-task-status" });
    var taskHistory = el("ol", { id: "call-task-history", class: "logs", "aria-label": "Task states seen" });
    var taskBox = el("div", { class: "task", hidden: true },
      el("p", {}, "Task ", taskId, ": ", taskStatus), taskHistory);
    run.appendChild(taskBox);
    var lastSeen = null;
    function showTask(task) {
      var seen = task.status + (task.statusMessage ? " · " + task.statusMessage : "");
      taskBox.hidden = false;
      taskId.textContent = task.taskId;
      taskStatus.textContent = seen;
      if (seen !== lastSeen) taskHistory.appendChild(el("li", { text: seen }));
      lastSeen = seen;
    }
    var progressBox = el("div", { class: "progress", hidden: true }, progress, " ", progressText);
    run.appendChild(progressBox);
    run.appendChild(questions);
    var logsBox = el("div", { hidden: true }, el("h4", { text: "Log messages" }), logs);
    run.appendChild(logsBox);
    run.appendChild(outcome);
    run.appendChild(viewBox);
    run.appendChild(el("details", { class: "raw" }, el("summary", { text: "Raw JSON-RPC exchange of this call" }), exchange));

    progressTokens += 1;
    var token = "explorer-" + progressTokens;
    var call = {
      abort: new AbortController(),
      questions: questions,
      onNotification: function (message) {
        var params = message.params || {};
        if (message.method === "notifications/progress" && params.progressToken === token) {
          progressBox.hidden = false;
          if (typeof params.total === "number" && params.total > 0) {
            progress.max = params.total;
            progress.value = params.progress;
          } else {
            progress.removeAttribute("value");
          }
          progressText.textContent = params.progress + (params.total !== undefined ? " / " + params.total : "") + (params.message ? " · " + params.message : "");
        } else if (message.method === "notifications/message") {
          logsBox.hidden = false;
          logs.appendChild(el("li", { class: "log-" + params.level, text: params.level + (params.logger ? " [" + params.logger + "]" : "") + ": " + (typeof params.data === "string" ? params.data : compact(params.data)) }));
        }
      },
    };
    function onExchange(entry) {
      exchange.appendChild(el("li", { class: "exchange-" + entry.direction }, el("span", { class: "arrow", text: entry.direction === "out" ? "→ sent" : "← received" }), el("pre", { text: pretty(entry.message) })));
    }
    exchangeListeners.push(onExchange);
    supersedable(questions, call);
    var cancelled = false;
    call.cancel = function (reason) {
      cancelled = true;
      state.textContent = "cancelling";
      if (view) view.cancelled(reason);
      if (call.taskId) {
        // a task is cancelled with tasks/cancel; the polling goes on until it is over
        return client.cancelTask(call.taskId).catch(function (error) {
          outcome.appendChild(errorBox(error));
        });
      }
      return client.cancel(call, reason).catch(function (error) {
        outcome.appendChild(errorBox(error));
      });
    };
    activeCall = call;
    callButton.disabled = true;
    cancelButton.disabled = false;

    var view = null;
    var viewReady = Promise.resolve();
    var teardown = currentView ? currentView.teardown() : Promise.resolve();
    currentView = null;
    if (toolViewUri(tool)) {
      view = new ViewHost(tool, args, viewBox, viewLog);
      currentView = view;
      viewBox.appendChild(el("h4", { text: "View " + toolViewUri(tool) }));
      viewBox.appendChild(viewLog);
      viewReady = teardown.then(function () { return view.open(); }).catch(function (error) {
        viewBox.appendChild(errorBox(error));
      });
    }

    var params = { name: tool.name, arguments: args, _meta: { progressToken: token } };
    var calling = asTask ? client.callAsTask(params, call, showTask) : client.request("tools/call", params, call);
    calling.then(function (result) {
      state.textContent = result.isError ? "finished with a tool error" : "finished";
      outcome.appendChild(el("h4", { text: result.isError ? "Result (isError)" : "Result" }));
      outcome.appendChild(renderContent(result.content));
      if (result.structuredContent !== undefined) {
        outcome.appendChild(el("h4", { text: "structuredContent" }));
        outcome.appendChild(el("pre", { id: "call-structured", text: pretty(result.structuredContent) }));
        if (tool.outputSchema) {
          var problems = validate(tool.outputSchema, result.structuredContent, tool.outputSchema, "structuredContent", []);
          outcome.appendChild(el("p", { id: "call-schema-check", class: problems.length ? "error-text" : "ok-text",
            text: problems.length ? "Does not match the output schema: " + problems.join("; ") : "Matches the output schema." }));
        }
      } else if (tool.outputSchema && !result.isError) {
        outcome.appendChild(el("p", { id: "call-schema-check", class: "error-text", text: "The tool has an output schema but returned no structuredContent." }));
      }
      if (view) viewReady.then(function () { view.setResult(result); });
    }, function (error) {
      if (cancelled || error.cancelled) {
        state.textContent = "cancelled";
        return;
      }
      state.textContent = "failed";
      outcome.appendChild(errorBox(error, function () {
        if (!callButton.disabled) callTool(tool, args, run, callButton, cancelButton, asTask);
      }));
      if (view) viewReady.then(function () { view.cancelled(error.message); });
    }).then(function () {
      exchangeListeners.splice(exchangeListeners.indexOf(onExchange), 1);
      if (activeCall === call) activeCall = null;
      if (asTask) call.abort.abort(); // a tasks/result stream still open (2025-11-25)
      callButton.disabled = !client.tools[tool.name]; // the server may have removed it meanwhile
      cancelButton.disabled = true;
      Array.prototype.forEach.call(questions.querySelectorAll("form"), function (form) { form.remove(); });
    });
  }

  // -- resources -----------------------------------------------------------------------------------

  // RFC 6570 level 4 (section 3.2.1 and appendix A): an operator's first character,
  // separator, whether its values are named, what an empty named value gets after the
  // name, and whether reserved characters (and percent-encoded triplets) pass as they are.
  var TEMPLATE_OPERATORS = {
    "": { first: "", sep: ",", named: false, ifEmpty: "", reserved: false },
    "+": { first: "", sep: ",", named: false, ifEmpty: "", reserved: true },
    "#": { first: "#", sep: ",", named: false, ifEmpty: "", reserved: true },
    ".": { first: ".", sep: ".", named: false, ifEmpty: "", reserved: false },
    "/": { first: "/", sep: "/", named: false, ifEmpty: "", reserved: false },
    ";": { first: ";", sep: ";", named: true, ifEmpty: "", reserved: false },
    "?": { first: "?", sep: "&", named: true, ifEmpty: "=", reserved: false },
    "&": { first: "&", sep: "&", named: true, ifEmpty: "=", reserved: false },
  };
  var TEMPLATE_EXPRESSION = /\{([+#./;?&]?)([^}]+)\}/g;

  // The variables of each expression of a template: name, prefix length, explode.
  function templateExpressions(template, each) {
    return template.replace(TEMPLATE_EXPRESSION, function (_, operator, list) {
      return each(TEMPLATE_OPERATORS[operator], list.split(",").map(function (spec) {
        var m = /^(.*?)(?::(\d+)|(\*))?$/.exec(spec);
        return { name: m[1], prefix: m[2] ? Number(m[2]) : null, explode: !!m[3], operator: operator };
      }));
    });
  }

  // The variables of a template, in order, each once.
  function templateVariables(template) {
    var variables = [];
    var seen = {};
    templateExpressions(template, function (_, specs) {
      specs.forEach(function (spec) {
        if (!seen[spec.name]) variables.push(spec);
        seen[spec.name] = true;
      });
      return "";
    });
    return variables;
  }

  // Percent-encode (UTF-8) all but the unreserved characters (encodeURIComponent leaves
  // ! ' ( ) *), and, for {+x} and {#x}, the reserved ones and percent-encoded triplets.
  function encodeTemplateValue(value, reserved) {
    var pattern = reserved ? /%[0-9A-Fa-f]{2}|[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]/y : /[A-Za-z0-9\-._~]/y;
    var out = "";
    for (var i = 0; i < value.length; ) {
      pattern.lastIndex = i;
      var m = pattern.exec(value);
      var text = m ? m[0] : String.fromCodePoint(value.codePointAt(i));
      out += m ? text : new TextEncoder().encode(text).reduce(function (hex, byte) {
        return hex + "%" + (byte < 16 ? "0" : "") + byte.toString(16).toUpperCase();
      }, "");
      i += text.length;
    }
    return out;
  }

  // Expand an RFC 6570 template (levels 1 to 4). A value is a string or a list of
  // strings; undefined, null and an empty list leave the variable out.
  function expandTemplate(template, values) {
    return templateExpressions(template, function (op, specs) {
      var parts = [];
      specs.forEach(function (spec) {
        var value = values[spec.name];
        if (value === undefined || value === null || (Array.isArray(value) && !value.length)) return;
        function named(empty) {
          return op.named ? spec.name + (empty ? op.ifEmpty : "=") : "";
        }
        if (!Array.isArray(value)) {
          if (spec.prefix !== null) value = Array.from(value).slice(0, spec.prefix).join("");
          parts.push(named(value === "") + encodeTemplateValue(value, op.reserved));
        } else if (!spec.explode) {
          parts.push(named(false) + value.map(function (item) { return encodeTemplateValue(item, op.reserved); }).join(","));
        } else {
          parts.push(value.map(function (item) { return named(item === "") + encodeTemplateValue(item, op.reserved); }).join(op.sep));
        }
      });
      return parts.length ? op.first + parts.join(op.sep) : "";
    });
  }

  function completionSupported() {
    var capabilities = (client.serverResult && client.serverResult.capabilities) || {};
    return !!capabilities.completions;
  }

  // Ask completion/complete as the user types into an input; fill its datalist.
  function completeInto(input, ref, argument, contextValues) {
    if (!completionSupported()) return;
    var list = el("datalist", { id: input.id + "-options" });
    input.setAttribute("list", list.id);
    input.setAttribute("autocomplete", "off");
    input.parentNode.appendChild(list);
    var timer = null;
    var asked = 0;
    function ask() {
      var value = input.value;
      var params = { ref: ref, argument: { name: argument, value: value } };
      var others = contextValues();
      if (Object.keys(others).length) params.context = { arguments: others };
      asked += 1;
      var mine = asked;
      client.request("completion/complete", params).then(function (result) {
        if (mine !== asked) return; // a later keystroke asked again: its answer wins
        clear(list);
        input.setAttribute("data-completed-for", value);
        ((result.completion && result.completion.values) || []).forEach(function (value) {
          list.appendChild(el("option", { value: value }));
        });
        input.setAttribute("data-completions", String(list.childNodes.length));
      }).catch(function () { return null; });
    }
    input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(ask, 150); });
    input.addEventListener("focus", ask);
  }

  function renderResources(resources, templates) {
    var list = clear($("resource-list"));
    resourcesByUri = {};
    resources.forEach(function (resource) {
      resourcesByUri[resource.uri] = resource;
      list.appendChild(listButton(resource.title || resource.name || resource.uri, resource.uri + (resource.mimeType ? " · " + resource.mimeType : ""), function () { openResource(resource); }));
    });
    templates.forEach(function (template) {
      list.appendChild(listButton((template.title || template.name) + " (template)", template.uriTemplate, function () { openTemplate(template); }));
    });
    if (!resources.length && !templates.length) list.appendChild(el("li", { class: "muted", text: "No resources." }));
  }

  // Mark `box` as showing a new request's answer; the returned function tells whether it
  // still does (no later request was made into it), so a late answer is left out.
  function latestInto(box) {
    var asked = (box.asked || 0) + 1;
    box.asked = asked;
    return function () { return box.asked === asked; };
  }

  // `method` with `params` made into `box`: its state (running, then finished, failed or
  // cancelled, in a paragraph of id `stateId`), then show(result) or its error with a
  // retry that runs again(). `cancelButton` cancels it while it runs, the way each era
  // cancels, as a tool call's does. Only the last request made into `box` shows, and only
  // its questions (those of the one it replaces are dismissed).
  function requestInto(box, cancelButton, stateId, method, params, show, again) {
    var latest = latestInto(box);
    clear(box);
    var state = box.appendChild(el("p", { id: stateId, class: "state", text: "running" }));
    var call = { abort: new AbortController(), questions: box };
    supersedable(box, call);
    var cancelled = false;
    box.cancel = function () {
      cancelled = true;
      state.textContent = "cancelling";
      return client.cancel(call, "cancelled in the explorer").catch(function (error) {
        if (latest()) box.appendChild(errorBox(error));
      });
    };
    cancelButton.disabled = false;
    client.request(method, params, call).then(function (result) {
      if (!latest()) return;
      state.textContent = "finished";
      show(result);
    }, function (error) {
      if (!latest()) return;
      if (cancelled || error.cancelled) {
        state.textContent = "cancelled";
        return;
      }
      state.textContent = "failed";
      box.appendChild(errorBox(error, again));
    }).then(function () {
      if (!latest()) return;
      box.cancel = null;
      cancelButton.disabled = true;
      Array.prototype.forEach.call(box.querySelectorAll("form.question"), function (form) { form.remove(); });
    });
  }

  // A Cancel for the request running in `box` (see requestInto).
  function cancelInto(box, id) {
    var button = el("button", { type: "button", id: id, class: "cancel", text: "Cancel", disabled: true });
    button.addEventListener("click", function () { if (box.cancel) box.cancel(); });
    return button;
  }

  // resources/read of `uri`, its state and contents shown in `box` (see requestInto).
  function readInto(uri, box, cancelButton, stateId) {
    requestInto(box, cancelButton, stateId, "resources/read", { uri: uri }, function (result) {
      box.appendChild(renderResourceContents(result.contents));
    }, function () { readInto(uri, box, cancelButton, stateId); });
  }

  function openResource(resource) {
    var detail = leave($("resource-detail"));
    detail.appendChild(el("h3", { text: resource.title || resource.name || resource.uri }));
    detail.appendChild(el("p", { class: "muted", text: resource.uri }));
    if (resource.description) detail.appendChild(el("p", { text: resource.description }));
    var box = el("div", { id: "resource-contents" });
    var cancelButton = cancelInto(box, "cancel-read");
    var read = el("button", { type: "button", text: "Read " + resource.uri });
    read.addEventListener("click", function () { readInto(resource.uri, box, cancelButton, "read-state"); });
    detail.appendChild(el("div", { class: "buttons" }, read, cancelButton));
    detail.appendChild(box);
    readInto(resource.uri, box, cancelButton, "read-state");
  }

  function openTemplate(template) {
    var detail = leave($("resource-detail"));
    detail.appendChild(el("h3", { id: "template-heading", text: template.title || template.name }));
    detail.appendChild(el("p", { class: "muted", text: template.uriTemplate }));
    if (template.description) detail.appendChild(el("p", { text: template.description }));
    var inputs = {};
    var form = el("form", { id: "template-form", "aria-labelledby": "template-heading" });
    var lists = {}; // an exploded variable ({/path*}) takes a list: a value a line
    templateVariables(template.uriTemplate).forEach(function (variable) {
      var id = nextId("var");
      lists[variable.name] = variable.explode;
      var input = variable.explode
        ? el("textarea", { id: id, name: variable.name, rows: 3 })
        : el("input", { type: "text", id: id, name: variable.name });
      inputs[variable.name] = input;
      var label = variable.name + (variable.explode ? " (one a line)" : "");
      form.appendChild(el("div", { class: "field" }, el("label", { for: id, text: label }), input));
    });
    var box = el("div", { id: "resource-contents" });
    var cancelButton = cancelInto(box, "cancel-read");
    form.appendChild(el("div", { class: "buttons" }, el("button", { type: "submit", text: "Read" }), cancelButton));
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var values = {};
      Object.keys(inputs).forEach(function (name) {
        var value = inputs[name].value; // an empty field leaves its variable out
        if (value !== "") values[name] = lists[name] ? value.split("\n") : value;
      });
      readInto(expandTemplate(template.uriTemplate, values), box, cancelButton, "read-state");
    });
    detail.appendChild(form);
    detail.appendChild(box);
    Object.keys(inputs).forEach(function (name) {
      if (lists[name]) return; // a datalist completes an input, not a textarea
      completeInto(inputs[name], { type: "ref/resource", uri: template.uriTemplate }, name, function () {
        var others = {};
        Object.keys(inputs).forEach(function (other) { if (other !== name && inputs[other].value) others[other] = inputs[other].value; });
        return others;
      });
    });
  }

  // -- prompts ---------------------------------------------------------------------------------------

  function renderPrompts(prompts) {
    var list = clear($("prompt-list"));
    prompts.forEach(function (prompt) {
      list.appendChild(listButton(prompt.title || prompt.name, prompt.name, function () { openPrompt(prompt); }));
    });
    if (!prompts.length) list.appendChild(el("li", { class: "muted", text: "No prompts." }));
  }

  // prompts/get of `prompt` with `args`, its state and messages shown in `box` (see
  // requestInto).
  function getPrompt(prompt, args, box, cancelButton) {
    requestInto(box, cancelButton, "prompt-state", "prompts/get", { name: prompt.name, arguments: args }, function (result) {
      if (result.description) box.appendChild(el("p", { text: result.description }));
      (result.messages || []).forEach(function (message) {
        box.appendChild(el("h4", { text: message.role }));
        box.appendChild(renderContent([message.content]));
      });
    }, function () { getPrompt(prompt, args, box, cancelButton); });
  }

  function openPrompt(prompt) {
    var detail = leave($("prompt-detail"));
    detail.appendChild(el("h3", { id: "prompt-heading", text: prompt.title || prompt.name }));
    if (prompt.description) detail.appendChild(el("p", { text: prompt.description }));
    var inputs = {};
    var form = el("form", { id: "prompt-form", "aria-labelledby": "prompt-heading" });
    (prompt.arguments || []).forEach(function (argument) {
      var id = nextId("arg");
      var input = el("input", { type: "text", id: id, name: argument.name, required: !!argument.required });
      inputs[argument.name] = input;
      form.appendChild(el("div", { class: "field" },
        el("label", { for: id, text: (argument.title || argument.name) + (argument.required ? " (required)" : "") }), input,
        argument.description ? el("small", { class: "hint", text: argument.description }) : null));
    });
    var box = el("div", { id: "prompt-messages" });
    var cancelButton = cancelInto(box, "cancel-prompt");
    form.appendChild(el("div", { class: "buttons" }, el("button", { type: "submit", text: "Get prompt" }), cancelButton));
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var args = {};
      Object.keys(inputs).forEach(function (name) { if (inputs[name].value !== "") args[name] = inputs[name].value; });
      getPrompt(prompt, args, box, cancelButton);
    });
    detail.appendChild(form);
    detail.appendChild(box);
    Object.keys(inputs).forEach(function (name) {
      completeInto(inputs[name], { type: "ref/prompt", name: prompt.name }, name, function () {
        var others = {};
        Object.keys(inputs).forEach(function (other) { if (other !== name && inputs[other].value) others[other] = inputs[other].value; });
        return others;
      });
    });
  }

  // -- skills ------------------------------------------------------------------------------------------

  function renderSkills() {
    var box = clear($("skills"));
    var extensions = (client.serverResult && client.serverResult.capabilities && client.serverResult.capabilities.extensions) || {};
    var served = Object.keys(extensions).some(function (key) { return /skills/.test(key); });
    if (!served) {
      box.appendChild(el("p", { class: "muted", text: "This server does not serve skills." }));
      return Promise.resolve();
    }
    return client.listAll("skills/list", "skills").then(function (skills) {
      if (!skills.length) box.appendChild(el("p", { class: "muted", text: "No skills listed." }));
      skills.forEach(function (skill) {
        var front = skill.frontmatter || {};
        var contents = el("div", { class: "skill-contents" });
        var cancelButton = cancelInto(contents, null);
        var read = el("button", { type: "button", text: "Read " + skill.uri });
        read.addEventListener("click", function () { readInto(skill.uri, contents, cancelButton, null); });
        box.appendChild(el("article", { class: "skill" },
          el("h3", { text: front.name || skill.name || skill.uri }),
          el("p", { class: "muted", text: skill.uri }),
          front.description || skill.description ? el("p", { text: front.description || skill.description }) : null,
          el("details", {}, el("summary", { text: "Entry" }), el("pre", { text: pretty(skill) })),
          el("div", { class: "buttons" }, read, cancelButton), contents));
      });
    }, function (error) { box.appendChild(errorBox(error)); });
  }

  // -- connecting ----------------------------------------------------------------------------------------

  function has(capability) {
    var capabilities = (client.serverResult && client.serverResult.capabilities) || {};
    return capabilities[capability] !== undefined;
  }

  function serverCapabilities() {
    return (client && client.serverResult && client.serverResult.capabilities) || {};
  }

  // A list changed on the server: list it again. A failure (the server is gone, say) is
  // said on the status line; the list shown stays as it was.
  function onListChanged(message) {
    var kind = (/^notifications\/(tools|resources|prompts)\/list_changed$/.exec(message.method) || [])[1];
    if (!kind) return;
    setStatus("the server's " + kind + " changed; listed again");
    var listed;
    if (kind === "tools") listed = client.listAll("tools/list", "tools").then(renderTools);
    else if (kind === "prompts") listed = client.listAll("prompts/list", "prompts").then(renderPrompts);
    else {
      listed = Promise.all([client.listAll("resources/list", "resources"), client.listAll("resources/templates/list", "resourceTemplates")])
        .then(function (both) { renderResources(both[0], both[1]); });
    }
    listed.catch(function (error) {
      setStatus("the server's " + kind + " changed, but listing them again failed: " + error.message);
    });
  }

  // List the server's tools, resources, templates, prompts and skills.
  function listEverything() {
    var steps = [];
    steps.push(has("tools") ? client.listAll("tools/list", "tools").then(renderTools) : Promise.resolve(renderTools([])));
    steps.push(has("resources")
      ? Promise.all([client.listAll("resources/list", "resources"), client.listAll("resources/templates/list", "resourceTemplates")])
        .then(function (both) { renderResources(both[0], both[1]); })
      : Promise.resolve(renderResources([], [])));
    steps.push(has("prompts") ? client.listAll("prompts/list", "prompts").then(renderPrompts) : Promise.resolve(renderPrompts([])));
    steps.push(renderSkills());
    return Promise.all(steps);
  }

  function connect() {
    var version = $("era").value;
    var previous = client;
    setStatus("connecting");
    clear($("exchange"));
    urlElicitations = {}; // ids of the previous session
    if (currentView) { currentView.teardown(); currentView = null; }
    var closing = previous ? previous.close() : Promise.resolve();
    client = new Client(version, HANDLERS, $("token").value.trim());
    var connecting = client;
    connecting.onRenew = function (result) {
      if (client !== connecting) return;
      renderServer(result);
      listEverything().then(function () {
        setStatus("connected (" + (client.negotiated || client.version) + ", new session)");
      }, function (error) {
        setStatus("started a new session, but listing the server failed: " + error.message);
      });
    };
    return closing.then(function () { return connecting.connect(); }).then(function (result) {
      renderServer(result);
      return listEverything();
    }).then(function () {
      var capabilities = serverCapabilities();
      var changes = ["tools", "resources", "prompts"].some(function (kind) {
        return capabilities[kind] && capabilities[kind].listChanged;
      });
      if (changes) connecting.listen(onListChanged);
      leave($("tool-detail"));
      leave($("resource-detail"));
      leave($("prompt-detail"));
      setStatus("connected (" + (client.stateless ? client.version : (client.negotiated || client.version) + ", session") + ")");
      document.body.setAttribute("data-connected", client.version);
    }, function (error) {
      setStatus("connection failed: " + error.message);
      clear($("server-info")).appendChild(errorBox(error));
      document.body.setAttribute("data-connected", "failed");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll(".tab"), function (tab) {
      tab.addEventListener("click", function () { showSection(tab.getAttribute("data-section")); });
    });
    $("connect-form").addEventListener("submit", function (event) {
      event.preventDefault();
      connect();
    });
    var wanted = new URLSearchParams(location.search).get("era");
    if (wanted) $("era").value = wanted;
    window.addEventListener("pagehide", function () { if (client) client.close(); });
    connect();
  });
})();
