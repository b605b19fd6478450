"""Liveness and readiness probes: off by default, outside MCP auth, readiness pings the backend."""

from __future__ import annotations

import time
import typing as t

import pytest
from flask import Flask
from harness import free_port
from harness import redis_cluster
from harness import redis_server
from jwt_keys import ISSUER
from jwt_keys import RESOURCE
from wire import initialize_request

from flask_mcp import MCP
from flask_mcp.transport.health import PROBE_ID

PROBES = {"MCP_HEALTH_LIVENESS_PATH": "/livez", "MCP_HEALTH_READINESS_PATH": "/readyz"}


def make_app(**config: t.Any) -> Flask:
    mcp = MCP(name="health", version="1")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app = Flask(__name__)
    app.config.update(TESTING=True, SECRET_KEY="s", **config)
    mcp.init_app(app)
    return app


def test_off_by_default() -> None:
    client = make_app().test_client()
    assert client.get("/livez").status_code == 404
    assert client.get("/readyz").status_code == 404


def test_probes_answer_without_mcp_auth_or_session_with_the_host_check() -> None:
    def authorizer(token: str, request: t.Any) -> t.Any:
        raise AssertionError("a probe must not be authenticated")

    mcp = MCP(name="secure", version="1", authorizer=authorizer)
    app = Flask(__name__)
    app.config.update(
        TESTING=True, SECRET_KEY="s", MCP_AUTH_RESOURCE=RESOURCE,
        MCP_AUTH_AUTHORIZATION_SERVERS=[ISSUER], **PROBES,
    )  # fmt: skip
    mcp.init_app(app)
    client = app.test_client()
    assert client.post("/mcp", json={}).status_code == 401  # the MCP endpoint is protected
    # A kubelet probes the pod's IP from the node: no token, no session, and its Host
    # passes the endpoint's check (only a loopback caller must name a local host).
    kubelet = {"REMOTE_ADDR": "10.1.0.1"}
    live = client.get("/livez", headers={"Host": "10.1.2.3:8000"}, environ_base=kubelet)
    assert live.status_code == 200 and live.json == {"status": "ok"}
    assert live.headers["Cache-Control"] == "no-store"
    ready = client.get("/readyz", headers={"Host": "10.1.2.3:8000"}, environ_base=kubelet)
    assert ready.status_code == 200
    assert ready.json is not None and ready.json["status"] == "ready"
    assert ready.json["backend"] == "ok"


@pytest.mark.parametrize("path", ["/livez", "/readyz"])
def test_probes_get_the_host_check_of_the_endpoint(path: str) -> None:
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1 gets 421, as at MCP_PATH."""
    client = make_app(**PROBES).test_client()
    assert client.get(path).status_code == 200  # Host: localhost
    refused = client.get(path, headers={"Host": "evil.example"})
    assert refused.status_code == 421
    assert client.post("/mcp", json={}, headers={"Host": "evil.example"}).status_code == 421
    listed = make_app(MCP_ALLOWED_HOSTS=["mcp.internal"], **PROBES).test_client()
    remote = {"REMOTE_ADDR": "10.1.0.1"}
    assert listed.get(path, headers={"Host": "10.1.2.3"}, environ_base=remote).status_code == 421
    found = listed.get(path, headers={"Host": "mcp.internal"}, environ_base=remote)
    assert found.status_code == 200


@pytest.mark.redis
def test_readiness_follows_a_private_redis() -> None:
    port = free_port()
    with redis_server(port, missing="needs redis-server") as proc:
        app = make_app(MCP_BACKEND=f"redis://127.0.0.1:{port}/0", **PROBES)
        client = app.test_client()
        up = client.get("/readyz")
        assert up.status_code == 200
        proc.terminate()
        proc.wait(timeout=10)
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.headers["Retry-After"] == "2"
        assert ready.json == {"status": "unavailable", "backend": "unavailable"}
        for body in (up.get_data(as_text=True), ready.get_data(as_text=True)):
            assert "127.0.0.1" not in body and str(port) not in body  # the address is logged only
        assert client.get("/livez").status_code == 200  # liveness never touches the backend


@pytest.mark.redis
@pytest.mark.cluster
def test_readiness_follows_the_cluster_master_it_reads() -> None:
    """On a Redis Cluster the probe reads one slot: its master stopped (the others still up,
    the slot map still naming it), readiness answers 503 "unavailable", not a 500."""
    with redis_cluster(3) as cluster:
        app = make_app(MCP_BACKEND=cluster.url, **PROBES)
        client = app.test_client()
        assert client.get("/readyz").status_code == 200
        backend = app.extensions["mcp"].state(app).backend
        node = backend.client.get_node_from_key(backend.keys.record(PROBE_ID))
        proc = cluster.processes[cluster.ports.index(int(node.port))]
        proc.terminate()
        proc.wait(timeout=10)
        started = time.monotonic()
        ready = client.get("/readyz")
        took = time.monotonic() - started
        assert ready.status_code == 503 and ready.headers["Retry-After"] == "2", ready.json
        assert ready.json is not None and ready.json["backend"] == "unavailable", ready.json
        assert client.get("/livez").status_code == 200
        print(f"readiness answered 503 {took:.2f}s after its master stopped")


def test_probe_on_the_mcp_path_is_refused() -> None:
    with pytest.raises(ValueError, match="MCP_HEALTH_READINESS_PATH = '/mcp' is a path of"):
        make_app(MCP_HEALTH_READINESS_PATH="/mcp")


@pytest.mark.parametrize(
    ("mcp_path", "probe", "suggested"),
    [
        ("/t/<tenant>/mcp", "/t/acme/mcp", "/livez"),
        ("/t/<tenant>/mcp", "/t/<tenant>/mcp", "/livez"),
        ("/<tenant>", "/livez", "/_health/livez"),
        ("/<int:tenant>/mcp", "/7/mcp", "/livez"),
    ],
)
def test_probe_on_a_path_of_an_endpoint_with_url_variables_is_refused(
    mcp_path: str, probe: str, suggested: str
) -> None:
    """With URL variables in MCP_PATH a probe on a path the rule matches took that
    endpoint's place (``/t/acme/mcp``: acme's endpoint answered 405 to every POST), where
    the check compared the two paths' text only."""
    says = rf"MCP_HEALTH_LIVENESS_PATH = '{probe}' is a path of .*such as '{suggested}'"
    with pytest.raises(ValueError, match=says):
        make_app(MCP_PATH=mcp_path, MCP_HEALTH_LIVENESS_PATH=probe)


def test_probe_with_url_variables_is_refused() -> None:
    """A probe's view takes no URL variables: one in its path made every probe a 500."""
    with pytest.raises(ValueError, match=r"MCP_HEALTH_READINESS_PATH = '/ready/<x>'.*fixed path"):
        make_app(MCP_HEALTH_READINESS_PATH="/ready/<x>")


@pytest.mark.parametrize(
    ("mcp_path", "endpoint", "probe"),
    [("/mcp", "/mcp", "/mcp/livez"), ("/t/<tenant>/mcp", "/t/acme/mcp", "/livez")],
)
def test_probes_beside_the_endpoint_are_served(mcp_path: str, endpoint: str, probe: str) -> None:
    """A probe below a fixed MCP_PATH, or outside the paths of one with URL variables,
    takes no endpoint's place: both answer."""
    client = make_app(MCP_PATH=mcp_path, MCP_HEALTH_LIVENESS_PATH=probe).test_client()
    assert client.get(probe).get_json() == {"status": "ok"}
    response = client.post(
        endpoint,
        json=initialize_request(),
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)


@pytest.mark.e2e
@pytest.mark.parametrize("worker", ["gevent", "gthread"])
def test_probes_on_gunicorn(serve: t.Any, worker: str) -> None:
    import httpx

    env = {"FLASK_MCP_HEALTH_LIVENESS_PATH": "/livez", "FLASK_MCP_HEALTH_READINESS_PATH": "/readyz"}
    server = serve("tests._apps.observe:app", worker, env=env)
    live = httpx.get(f"{server.base_url}/livez")
    ready = httpx.get(f"{server.base_url}/readyz")
    assert (live.status_code, live.json()) == (200, {"status": "ok"})
    assert ready.status_code == 200 and ready.json()["backend"] == "ok"
    rebound = httpx.get(f"{server.base_url}/readyz", headers={"Host": "evil.example"})
    assert rebound.status_code == 421
