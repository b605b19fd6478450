"""A web host for MCP Apps that the browser tests load into headless Chromium.

``tests/apps_host/`` holds the host page: ``host.js`` on the official host bridge
(``AppBridge`` of ``@modelcontextprotocol/ext-apps``) and the TypeScript SDK client, the
sandbox proxy (``sandbox.html``, ``sandbox.js``) and a view written on the official App
SDK (``view-sdk.js``). :func:`build` installs the pinned packages (``npm ci``) and bundles
them with esbuild (``build.mjs``); :func:`serve` serves the host page and the sandbox proxy
on two origins of 127.0.0.1 (the spec: "The Host and the Sandbox MUST have different
origins"), the proxy with the Content-Security-Policy the spec says a host builds from the
view's ``_meta.ui.csp`` (:func:`view_csp`).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import shutil
import subprocess
import threading
import typing as t
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs
from urllib.parse import urlencode
from urllib.parse import urlsplit

from harness import HOST
from harness import skip_or_fail

APPS_HOST = Path(__file__).resolve().parent / "apps_host"
DIST = APPS_HOST / "dist"
NODE_HINT = "needs Node.js and npm to bundle the MCP Apps host (apt-get install nodejs npm)"

# An entry that cannot end a CSP source or directive (the reference host's check).
_SAFE_SOURCE = re.compile(r"[^;\r\n'\" ,]+")


def build() -> Path:
    """Install ``tests/apps_host``'s pinned packages and bundle the host and the SDK view.

    Returns the ``dist`` folder. Without Node and npm the test fails in CI, skips elsewhere.
    """
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        skip_or_fail(NODE_HINT)
    lock = APPS_HOST / "package-lock.json"
    stamp = APPS_HOST / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=APPS_HOST, check=True, timeout=600, capture_output=True,
        )  # fmt: skip
    done = subprocess.run(
        [node, "build.mjs"], cwd=APPS_HOST, timeout=300, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return DIST


def _sources(csp: dict[str, t.Any], key: str) -> str:
    values = csp.get(key) or []
    return " ".join(v for v in values if isinstance(v, str) and _SAFE_SOURCE.fullmatch(v))


def view_csp(csp: dict[str, t.Any] | None) -> str:
    """Return the Content-Security-Policy for a view whose ``_meta.ui.csp`` is ``csp``.

    ``None`` (no ``csp`` declared): the spec's restrictive default, with the sandbox
    proxy's ``frame-src 'none'``, ``object-src 'none'`` and ``base-uri 'self'``. Otherwise
    the construction of the spec's "Content Security Policy Enforcement" section.
    """
    if csp is None:
        directives = [
            "default-src 'none'",
            "script-src 'self' 'unsafe-inline'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "media-src 'self' data:",
            "connect-src 'none'",
            "frame-src 'none'",
            "object-src 'none'",
            "base-uri 'self'",
        ]
    else:
        resources = _sources(csp, "resourceDomains")
        directives = [
            "default-src 'none'",
            f"script-src 'self' 'unsafe-inline' {resources}",
            f"style-src 'self' 'unsafe-inline' {resources}",
            f"connect-src 'self' {_sources(csp, 'connectDomains')}",
            f"img-src 'self' data: {resources}",
            f"font-src 'self' {resources}",
            f"media-src 'self' data: {resources}",
            f"frame-src {_sources(csp, 'frameDomains') or chr(39) + 'none' + chr(39)}",
            "object-src 'none'",
            f"base-uri {_sources(csp, 'baseUriDomains') or chr(39) + 'self' + chr(39)}",
        ]
    return "; ".join(directive.strip() for directive in directives)


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves a fixed set of files of ``tests/apps_host``; the sandbox page with its CSP."""

    files: t.ClassVar[dict[str, tuple[str, str]]] = {}
    sandbox = False
    policies: t.ClassVar[list[str]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        parts = urlsplit(self.path)
        found = self.files.get(parts.path)
        if found is None:
            self.send_error(404)
            return
        relative, content_type = found
        body = (APPS_HOST / relative).read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if self.sandbox and parts.path == "/sandbox.html":
            raw = parse_qs(parts.query).get("csp")
            csp = json.loads(raw[0]) if raw else None
            policy = view_csp(csp)
            type(self).policies.append(policy)
            self.send_header("Content-Security-Policy", policy)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002
        pass


class HostHandler(_Handler):
    files = {
        "/": ("index.html", "text/html; charset=utf-8"),
        "/dist/host.js": ("dist/host.js", "text/javascript; charset=utf-8"),
    }


class SandboxHandler(_Handler):
    files = {
        "/sandbox.html": ("sandbox.html", "text/html; charset=utf-8"),
        "/sandbox.js": ("sandbox.js", "text/javascript; charset=utf-8"),
    }
    sandbox = True
    policies: t.ClassVar[list[str]] = []


class HostSite(t.NamedTuple):
    """The two origins :func:`serve` runs."""

    host: str
    sandbox: str
    #: The Content-Security-Policy headers the sandbox proxy was served with, in order.
    policies: list[str]

    def page(self, server_url: str, tool: str, args: dict[str, t.Any]) -> str:
        """The host page's URL for calling ``tool`` of the MCP server at ``server_url``."""
        query = urlencode(
            {"server": server_url, "tool": tool, "args": json.dumps(args), "sandbox": self.sandbox}
        )
        return f"{self.host}/?{query}"


@contextlib.contextmanager
def serve() -> Iterator[HostSite]:
    """Serve the host page and the sandbox proxy on two ports of 127.0.0.1."""
    SandboxHandler.policies = []
    servers = [
        http.server.ThreadingHTTPServer((HOST, 0), HostHandler),
        http.server.ThreadingHTTPServer((HOST, 0), SandboxHandler),
    ]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        host, sandbox = (f"http://{HOST}:{s.server_address[1]}" for s in servers)
        yield HostSite(host, sandbox, SandboxHandler.policies)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        for thread in threads:
            thread.join(timeout=10)
