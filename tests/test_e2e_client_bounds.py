"""What one client may hold of a server, counted by who the client is (its address).

A real server behind a proxy (``ProxyFix`` sets ``REMOTE_ADDR`` from
``X-Forwarded-For``); raw HTTP through httpx.
"""

from __future__ import annotations

import typing as t

import httpx
import pytest
from wire import HEADERS
from wire import initialize_request

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
