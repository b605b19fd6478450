"""MCP Apps in a real browser host: headless Chromium, the official host bridge, a gevent server.

The host page (``tests/apps_host``, see :mod:`mcp_apps_host`) connects to
``tests/_apps/apps_host_server.py`` (the todo board of ``examples/apps.py``) with the
TypeScript SDK client, calls a tool bound to a view, reads the view with
``resources/read``, renders it through a sandbox proxy on another origin under the CSP
built from ``_meta.ui.csp``, and proxies the view's ``tools/call``. The board is tested
twice: written on Flask-MCP's ``mcp-app.js`` (``show_todos``) and on the official App SDK
(``show_todos_sdk``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import typing as t
from pathlib import Path

import mcp_apps_host
import pytest
from harness import free_port
from harness import start_server

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

#: Where to copy the helper board's screenshot (docs/_static/apps-todo-board.png is one).
SCREENSHOT_ENV = "MCP_TEST_APPS_SCREENSHOT"
WAIT_MS = 60_000
READY = "() => window.mcpHost && ['interactive', 'failed'].includes(window.mcpHost.state.phase)"

# In the view: fetch a URL (no-cors, so the server's answer does not matter) and report
# whether the CSP let it go, and the directive of any violation.
PROBE_FETCH = """async (url) => {
  const violations = [];
  document.addEventListener("securitypolicyviolation", (e) => violations.push(e.violatedDirective));
  let loaded;
  try { await fetch(url, { mode: "no-cors" }); loaded = true; } catch (error) { loaded = false; }
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { loaded, violations };
}"""

# In the view: call a tool through the host with a raw JSON-RPC request; return the answer.
RAW_TOOL_CALL = """(name) => new Promise((resolve) => {
  window.addEventListener("message", function answer(event) {
    if (event.data && event.data.id === "raw-1") {
      window.removeEventListener("message", answer);
      resolve(event.data);
    }
  });
  window.parent.postMessage(
    { jsonrpc: "2.0", id: "raw-1", method: "tools/call", params: { name, arguments: {} } }, "*");
})"""


@pytest.fixture(scope="module")
def host_dist() -> Path:
    return mcp_apps_host.build()


@pytest.fixture(scope="module")
def site(host_dist: Path) -> t.Iterator[mcp_apps_host.HostSite]:
    with mcp_apps_host.serve() as served:
        yield served


@pytest.fixture(scope="module")
def apps_server(host_dist: Path) -> t.Iterator[t.Any]:
    port = free_port()
    env = {"MCP_TEST_APPS_ORIGIN": f"http://127.0.0.1:{port}"}
    with start_server("tests._apps.apps_host_server:app", "gevent", port=port, env=env) as server:
        yield server


class HostPage:
    """The host page in a browser tab, and the view inside its two iframes."""

    def __init__(self, page: t.Any, server: t.Any) -> None:
        self.page = page
        self.server = server
        self.console: list[str] = []
        page.on("console", lambda message: self.console.append(message.text))
        page.on("pageerror", lambda error: self.console.append(f"page error: {error}"))
        self.view = page.frame_locator("#view-frame").frame_locator("iframe")

    def state(self) -> dict[str, t.Any]:
        return t.cast("dict[str, t.Any]", self.page.evaluate("window.mcpHost.state"))

    def view_frame(self) -> t.Any:
        """The view's frame (the sandbox proxy's only child frame)."""
        sandbox = self.page.frame_locator("#view-frame")
        sandbox.locator("iframe").wait_for(timeout=WAIT_MS)
        outer = self.page.query_selector("#view-frame").content_frame()
        return outer.child_frames[0]

    def explain(self) -> str:
        state = json.dumps(self.state(), indent=1, default=str)[:6000]
        console = "\n".join(self.console[-40:])
        return f"host state: {state}\nconsole:\n{console}\nserver:\n{self.server.log_tail()}"


def open_host(browser: t.Any, site: t.Any, server: t.Any, tool: str, list_name: str) -> HostPage:
    page = browser.new_page(viewport={"width": 640, "height": 720})
    host = HostPage(page, server)
    page.goto(site.page(server.url, tool, {"list_name": list_name}))
    page.wait_for_function(READY, timeout=WAIT_MS)
    state = host.state()
    assert state["phase"] == "interactive", host.explain()
    return host


@pytest.mark.parametrize("tool", ["show_todos", "show_todos_sdk"], ids=["mcp-app.js", "app-sdk"])
def test_view_renders_and_calls_an_app_only_tool_through_the_host(
    browser: t.Any, site: t.Any, apps_server: t.Any, tool: str, tmp_path: Path
) -> None:
    list_name = "groceries" if tool == "show_todos" else "groceries-sdk"
    host = open_host(browser, site, apps_server, tool, list_name)
    try:
        state = host.state()
        # the model's list leaves out the app-only tool; the tool ran and its result arrived
        assert tool in state["modelTools"] and "add_todo" not in state["modelTools"]
        assert state["toolResult"]["structuredContent"] == {"list": list_name, "items": []}
        assert "0 items" in state["toolResult"]["content"][0]["text"]
        assert state["appInfo"]["name"].startswith("Todo board")

        # the view rendered the tool input and result
        host.view.locator("#list-name").filter(has_text=list_name).wait_for(timeout=WAIT_MS)
        host.view.locator("#status").filter(has_text="0 items").wait_for(timeout=WAIT_MS)

        # the form calls add_todo (visibility ["app"]) through the host, then re-renders
        host.view.locator("#new-item").fill("Buy bread")
        host.view.locator("button[type=submit]").click()
        host.view.locator("#items li").filter(has_text="Buy bread").wait_for(timeout=WAIT_MS)
        host.view.locator("#status").filter(has_text="1 items").wait_for(timeout=WAIT_MS)
        host.view.locator("#new-item").fill("Flour")
        host.view.locator("#new-item").press("Enter")
        host.view.locator("#status").filter(has_text="2 items").wait_for(timeout=WAIT_MS)
        state = host.state()
        assert [call["name"] for call in state["calls"]] == ["add_todo", "add_todo"]
        assert state["calls"][0]["arguments"] == {"list_name": list_name, "text": "Buy bread"}
        assert state["calls"][1]["result"]["structuredContent"]["items"] == ["Buy bread", "Flour"]
        assert host.view.locator("#items li").all_text_contents() == ["Buy bread", "Flour"]

        if tool == "show_todos":
            screenshot = tmp_path / "apps-todo-board.png"
            host.page.screenshot(path=str(screenshot), full_page=True)
            assert screenshot.read_bytes().startswith(b"\x89PNG")
            if os.environ.get(SCREENSHOT_ENV):
                shutil.copyfile(screenshot, os.environ[SCREENSHOT_ENV])

        # a bad input is an isError result the view shows; nothing was added
        host.view.locator("#new-item").fill(" ")
        host.view.locator("#new-item").evaluate("input => input.removeAttribute('required')")
        host.view.locator("button[type=submit]").click()
        host.view.locator("#status").filter(has_text="1 to 200 characters").wait_for(
            timeout=WAIT_MS
        )
        assert host.view.locator("#items li").count() == 2

        # the view reported its size and the host sized the iframe to it
        # (the view may report again as it lays out: compare with the latest report, waiting
        # until the host has applied it)
        assert state["sizes"], host.explain()
        deadline = time.monotonic() + WAIT_MS / 1000
        while True:
            last = host.state()["sizes"][-1]["height"]  # live: `state` is an earlier snapshot
            height = host.page.eval_on_selector("#view-frame", "frame => frame.style.height")
            if height == f"{last}px" or time.monotonic() > deadline:
                break
            host.page.wait_for_timeout(50)
        assert last > 100 and height == f"{last}px"

        # teardown: the host asks, the view answers, the host removes it
        answer = host.page.evaluate("window.mcpHost.teardown()")
        assert answer == {}
        assert host.state()["phase"] == "closed"
    except Exception:
        print(host.explain())
        raise
    finally:
        host.page.close()


def test_view_without_csp_gets_the_restrictive_default(
    browser: t.Any, site: t.Any, apps_server: t.Any
) -> None:
    host = open_host(browser, site, apps_server, "show_todos", "csp-default")
    try:
        state = host.state()
        assert state["resource"]["ui"] == {"prefersBorder": True}
        assert site.policies[-1] == mcp_apps_host.view_csp(None)
        assert "connect-src 'none'" in site.policies[-1]
        probe = host.view_frame().evaluate(PROBE_FETCH, apps_server.url)
        assert probe == {"loaded": False, "violations": ["connect-src"]}, host.explain()
        # the host refuses a view's call to a tool the model alone may call
        answer = host.view_frame().evaluate(RAW_TOOL_CALL, "model_only")
        assert "error" in answer and "not callable by apps" in answer["error"]["message"]
        assert "model_only" in host.state()["refused"]
    except Exception:
        print(host.explain())
        raise
    finally:
        host.page.close()


def test_the_helpers_requests_pass_the_official_hosts_checks(
    browser: t.Any, site: t.Any, apps_server: t.Any
) -> None:
    host = open_host(browser, site, apps_server, "show_todos", "helper-requests")
    try:
        frame = host.view_frame()
        # ui/message carries content blocks (a list), which AppBridge checks
        sent = frame.evaluate("() => app.sendMessage('Add eggs').then(() => 'sent', String)")
        assert sent == "sent", host.explain()
        [message] = host.state()["messages"]
        assert message == {"role": "user", "content": [{"type": "text", "text": "Add eggs"}]}
        opened = frame.evaluate("() => app.openLink('https://example.com/').catch(String)")
        assert "denied by this test host" in opened, host.explain()  # the host's own refusal
    except Exception:
        print(host.explain())
        raise
    finally:
        host.page.close()


def test_declared_and_collected_origins_are_the_only_ones_allowed(
    browser: t.Any, site: t.Any, apps_server: t.Any
) -> None:
    host = open_host(browser, site, apps_server, "show_todos_sdk", "csp-declared")
    origin = apps_server.base_url
    try:
        ui = host.state()["resource"]["ui"]
        # connectDomains as declared; resourceDomains collected from mcp_app_asset_url
        assert ui == {
            "csp": {"connectDomains": [origin], "resourceDomains": [origin]},
            "prefersBorder": True,
        }
        assert site.policies[-1] == mcp_apps_host.view_csp(ui["csp"])
        frame = host.view_frame()
        frame.wait_for_function("() => document.getElementById('icon').complete")
        assert frame.evaluate("() => document.getElementById('icon').naturalWidth") > 0
        assert frame.evaluate(PROBE_FETCH, apps_server.url) == {"loaded": True, "violations": []}
        blocked = frame.evaluate(PROBE_FETCH, site.host + "/")
        assert blocked == {"loaded": False, "violations": ["connect-src"]}, host.explain()
    except Exception:
        print(host.explain())
        raise
    finally:
        host.page.close()


# -- mcp-app.js against a scripted host ------------------------------------------------

# A host page that answers ui/initialize, refuses tools/call, never answers resources/read,
# and records every message of the view (a srcdoc iframe with mcp-app.js inlined).
SCRIPTED_HOST = """<!DOCTYPE html><html><body><iframe id="view" sandbox="allow-scripts"></iframe>
<script>
window.seen = [];
const view = document.getElementById("view");
function post(message) { view.contentWindow.postMessage(message, "*"); }
window.post = post;
window.addEventListener("message", (event) => {
  if (event.source !== view.contentWindow) return;
  const message = event.data;
  window.seen.push(message);
  if (message.method === "ui/initialize") {
    post({ jsonrpc: "2.0", id: message.id, result: {
      protocolVersion: "2026-01-26", hostInfo: { name: "scripted", version: "1" },
      hostCapabilities: { serverTools: {} },
      hostContext: { theme: "dark", styles: { variables: { "--probe": "rgb(1, 2, 3)" } } } } });
  } else if (message.method === "tools/call") {
    post({ jsonrpc: "2.0", id: message.id, error: { code: -32000, message: "denied" } });
  }
});
view.srcdoc = VIEW_HTML;
</script></body></html>"""

PROBE_VIEW = """<!DOCTYPE html><html><head><title>probe</title></head><body><p>probe</p>
<script>HELPER</script>
<script>
window.results = {};
window.app = McpApp.connect({
  name: "probe", version: "2", timeout: 300,
  onToolInput(args) { results.input = args; },
  onToolResult(result) { results.result = result; },
  onHostContextChanged(context) { results.changed = context; },
  onTeardown(reason) { results.torn = reason; },
});
app.ready.then((answer) => { results.ready = answer.hostInfo.name; });
app.callTool("add", { a: 1 }).catch((e) => {
  results.refused = { message: e.message, code: e.code };
});
app.readResource("ui://never").catch((e) => { results.timeout = e.message; });
</script></body></html>"""


def test_mcp_app_js_speaks_the_views_side_of_the_protocol(browser: t.Any) -> None:
    from flask_mcp.extensions.apps import helper_source

    view = PROBE_VIEW.replace("HELPER", helper_source())
    page = browser.new_page()
    try:
        # the view's HTML as a JS string inside the host's <script>: no "</" may end it
        page.set_content(SCRIPTED_HOST.replace("VIEW_HTML", json.dumps(view).replace("</", "<\\/")))
        page.wait_for_function(
            "() => window.seen.some((m) => m.method === 'ui/notifications/initialized')"
        )
        frame = page.frames[1]
        frame.wait_for_function("() => results.ready && results.refused && results.timeout")
        seen = page.evaluate("window.seen")
        assert seen[0]["method"] == "ui/initialize"
        assert seen[0]["params"] == {
            "appInfo": {"name": "probe", "version": "2"},
            "appCapabilities": {"availableDisplayModes": ["inline"]},
            "protocolVersion": "2026-01-26",
        }
        results = frame.evaluate("results")
        assert results["ready"] == "scripted"
        assert results["refused"] == {"message": "denied", "code": -32000}
        assert results["timeout"] == "resources/read: no answer from the host within 300 ms"
        # the host context of the answer is applied: CSS variables and the theme
        style = "() => [getComputedStyle(document.documentElement).getPropertyValue('--probe'),"
        style += " document.documentElement.dataset.theme]"
        assert frame.evaluate(style) == ["rgb(1, 2, 3)", "dark"]
        page.wait_for_function(
            "() => window.seen.some((m) => m.method === 'ui/notifications/size-changed')"
        )
        size = next(m for m in page.evaluate("window.seen") if "size-changed" in m["method"])
        assert size["params"]["height"] > 0 and size["params"]["width"] > 0

        def send(message: dict[str, t.Any]) -> None:
            page.evaluate("(message) => window.post(message)", message)

        def answer_to(request_id: str) -> dict[str, t.Any]:
            page.wait_for_function("(id) => window.seen.some((m) => m.id === id)", arg=request_id)
            return t.cast(
                "dict[str, t.Any]",
                page.evaluate("(id) => window.seen.find((m) => m.id === id)", request_id),
            )

        send(
            {
                "jsonrpc": "2.0",
                "method": "ui/notifications/tool-input",
                "params": {"arguments": {"q": 1}},
            }
        )
        send(
            {
                "jsonrpc": "2.0",
                "method": "ui/notifications/tool-result",
                "params": {"content": [], "structuredContent": {"n": 2}},
            }
        )
        ctx = {"theme": "light", "locale": "fr-FR"}
        send({"jsonrpc": "2.0", "method": "ui/notifications/host-context-changed", "params": ctx})
        frame.wait_for_function("() => results.changed")
        assert frame.evaluate("results.input") == {"q": 1}
        assert frame.evaluate("results.result.structuredContent") == {"n": 2}
        merged = frame.evaluate(
            "[app.hostContext.theme, app.hostContext.locale,"
            " app.hostContext.styles.variables['--probe']]"
        )
        assert merged == ["light", "fr-FR", "rgb(1, 2, 3)"]

        send({"jsonrpc": "2.0", "id": "p1", "method": "ping", "params": {}})
        assert answer_to("p1") == {"jsonrpc": "2.0", "id": "p1", "result": {}}
        send({"jsonrpc": "2.0", "id": "u1", "method": "tools/list", "params": {}})
        assert answer_to("u1")["error"]["code"] == -32601
        send(
            {
                "jsonrpc": "2.0",
                "id": "t1",
                "method": "ui/resource-teardown",
                "params": {"reason": "done"},
            }
        )
        assert answer_to("t1") == {"jsonrpc": "2.0", "id": "t1", "result": {}}
        assert frame.evaluate("results.torn") == "done"
        closed = frame.evaluate(
            "() => app.callTool('add', {}).then(() => 'sent', (e) => e.message)"
        )
        assert closed == "the view is closed"
    finally:
        page.close()
