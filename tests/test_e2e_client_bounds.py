"""What one client may hold of a server, counted by who the client is (its address).

A real server behind a proxy (``ProxyFix`` sets ``REMOTE_ADDR`` from
``X-Forwarded-For``); raw HTTP through httpx.
"""

from __future__ import annotations

import http.client
import json
import typing as t

import httpx
import pytest
from wire import HEADERS
from wire import headers_2026
from wire import initialize_request
from wire import meta

pytestmark = pytest.mark.e2e

APP = "tests._apps.behind_proxy:app"


def test_an_ipv6_client_is_one_client_whatever_address_of_its_network(serve: t.Any) -> None:
    """A client with an IPv6 /64 (what one subscriber gets) has 2**64 addresses: counted
    by its address, it took every session of MCP_MAX_SESSIONS by changing it. Its /64 is
    one client now; another network still gets a session."""
    env = {"FLASK_MCP_MAX_SESSIONS_PER_CLIENT": "2"}
    server = serve(APP, "gthread", threads=4, env=env)

    def initialize(http: httpx.Client, address: str) -> httpx.Response:
        headers = {**HEADERS, "X-Forwarded-For": address}
        return http.post(server.url, headers=headers, json=initialize_request())

    with httpx.Client(timeout=30) as http:
        assert initialize(http, "2001:db8:1:2::1").status_code == 200
        assert initialize(http, "2001:db8:1:2::2").status_code == 200
        refused = initialize(http, "2001:db8:1:2:ffff::3")
        assert refused.status_code == 429, refused.text
        assert "MCP_MAX_SESSIONS_PER_CLIENT" in refused.json()["error"]["message"]
        assert initialize(http, "2001:db8:1:3::1").status_code == 200
        assert initialize(http, "10.0.0.1").status_code == 200
        assert initialize(http, "::ffff:10.0.0.1").status_code == 200
        assert initialize(http, "10.0.0.1").status_code == 429  # one client, both ways


def test_client_network() -> None:
    from flask_mcp.protocol.hosts import client_network

    assert client_network("2001:DB8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert client_network("fe80::1%eth0") == "fe80::/64"
    assert client_network("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_network("192.0.2.7") == "192.0.2.7"
    assert client_network(None) == "local"
    assert client_network("unix:/run/app.sock") == "unix:/run/app.sock"


def _listen(port: int, address: str) -> tuple[http.client.HTTPConnection, int, bytes]:
    """Open a 2026-07-28 ``subscriptions/listen`` from ``address`` (``X-Forwarded-For``);
    return its connection, left open, the status and the first bytes of the answer."""
    params: dict[str, t.Any] = {"notifications": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen"}
    body["params"] = {**params, "_meta": meta({})}
    headers = {
        **headers_2026("subscriptions/listen", params),
        "Content-Type": "application/json",
        "X-Forwarded-For": address,
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/mcp", json.dumps(body), headers)
    response = conn.getresponse()
    return conn, response.status, response.read1(65536)


def test_one_client_cannot_take_every_connection_of_a_gevent_worker(serve: t.Any) -> None:
    """A gevent stream takes no thread, so nothing bounded a client's streams: one address
    opening ``subscriptions/listen`` after listen held every file the worker could open (its
    ``ulimit -n``), and the next client's connection was never accepted. A gevent worker's
    stream slots are half its open-file limit now, of which one client holds its share."""
    server = serve("tests._apps.few_files:app", "gevent")  # 200 files: 100 slots, 50 a client
    held: list[http.client.HTTPConnection] = []
    try:
        for _ in range(200):  # as many as the worker has files: it could accept no more
            conn, status, head = _listen(server.port, "10.0.0.66")
            held.append(conn)
            if status != 200:
                break
        assert status == 503, head
        assert b"MCP_STREAM_SHARE_PER_CLIENT" in head and len(held) == 51
        conn, status, head = _listen(server.port, "10.0.0.1")  # another client: served
        held.append(conn)
        assert status == 200 and b"notifications/subscriptions/acknowledged" in head, head
        with httpx.Client(timeout=10) as client:
            headers = {**HEADERS, "X-Forwarded-For": "10.0.0.2"}
            assert client.post(server.url, headers=headers, json=initialize_request()).is_success
    finally:
        for conn in held:
            conn.close()
