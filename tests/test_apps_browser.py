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
        assert state["sizes"], host.explain()
        last = state["sizes"][-1]["height"]
        height = host.page.eval_on_selector("#view-frame", "frame => frame.style.height")
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
