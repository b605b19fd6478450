"""Liveness and readiness probes, for Kubernetes and load balancers.

Both are plain Flask routes of the app, outside ``MCP_PATH``: no MCP
authorization, no session. They get the Host check of the MCP endpoint
(:func:`~flask_mcp.protocol.hosts.check_request_host`: 421 for a Host that could
come from DNS rebinding; a kubelet probing the pod's IP from the node passes
it when ``MCP_ALLOWED_HOSTS`` is unset, and must send a listed ``Host`` when it
is set). They are served only when their ``MCP_HEALTH_*_PATH`` key is set.

- liveness (``MCP_HEALTH_LIVENESS_PATH``): ``200 {"status": "ok"}`` whenever the
  worker answers at all; it touches nothing shared, so a Redis outage never gets
  a healthy pod restarted;
- readiness (``MCP_HEALTH_READINESS_PATH``): checks the backend
  (:meth:`~flask_mcp.backends.base.Backend.check_ready`: Redis takes one write of a
  short-lived key, bounded by its socket timeout) and answers
  ``200 {"status": "ready", ...}`` or ``503 {"status": "unavailable", ...}``
  with ``Retry-After``, so the pod leaves the Service's endpoints while it
  cannot serve sessions: while Redis cannot be reached, and while it is full
  (it answers reads then, but refuses every write). The body never names the
  backend's address; the reason goes to the log.
"""

from __future__ import annotations

import logging
import time
import typing as t

from flask import Flask
from flask import Response
from flask import request

from .. import url_rules
from ..backends.base import READINESS_PROBE_ID
from ..errors import BackendFull
from ..errors import BackendUnavailable
from . import security
from .path_args import rule_values
from .responses import json_response

if t.TYPE_CHECKING:
    from ..config import Settings
    from ..runtime.state import AppState

logger = logging.getLogger("flask_mcp")
#: The session id readiness looks up: no session has it, so the lookup changes nothing.
PROBE_ID = READINESS_PROBE_ID
#: Why readiness answers 503 while the backend is full, for whoever reads the probe.
FULL_REASON = (
    "The session store is full: it refuses writes, so requests get 503 until it has room "
    "(raise Redis's maxmemory); the log says more."
)
_NO_CACHE = {"Cache-Control": "no-store"}


def check_request_host(settings: Settings) -> None:
    """Refuse the current request's ``Host`` as the MCP endpoint would (``MCP_ALLOWED_HOSTS``).

    For the routes Flask-MCP serves beside the endpoint: the probes and ``/metrics``.

    :raises ~flask_mcp.errors.MCPHTTPError: 421 Misdirected Request.
    """
    security.check_request_host(request.environ, settings.allowed_hosts)


def liveness() -> Response:
    """Answer ``200 {"status": "ok"}``: the worker runs and serves requests."""
    return json_response({"status": "ok"}, headers=_NO_CACHE)


def readiness(state: AppState) -> Response:
    """Check the backend; ``200`` when it serves, ``503`` with ``Retry-After`` when not.

    Not when it cannot be reached, nor when it is full (:class:`~flask_mcp.errors.BackendFull`).
    """
    started = time.perf_counter()
    try:
        state.backend.check_ready()
    except BackendFull as exc:
        logger.warning("Readiness probe: the backend refuses writes: %s", exc)
        body = {"status": "unavailable", "backend": "full", "reason": FULL_REASON}
        return json_response(body, 503, {**_NO_CACHE, "Retry-After": "2"})
    except BackendUnavailable as exc:
        # The reason names the backend's address: the log has it, the body (served to
        # whoever reaches the port) does not.
        logger.warning("Readiness probe: the backend is unavailable: %s", exc)
        body = {"status": "unavailable", "backend": "unavailable"}
        return json_response(body, 503, {**_NO_CACHE, "Retry-After": "2"})
    except Exception as exc:  # a backend of the app's own that fails otherwise
        logger.exception("Readiness probe: the backend failed")
        body = {"status": "unavailable", "backend": "error", "detail": type(exc).__name__}
        return json_response(body, 503, {**_NO_CACHE, "Retry-After": "2"})
    elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
    ready = {"status": "ready", "backend": "ok", "backend_ms": elapsed_ms}
    return json_response(ready, headers=_NO_CACHE)


def check_health_paths(app: Flask, settings: Settings) -> None:
    """Check that each probe has a fixed path of its own (before anything is registered).

    A probe on a path of the MCP endpoint would take its place: ``MCP_PATH`` itself,
    or with URL variables any path its rule matches (``/t/acme/mcp`` for
    ``/t/<tenant>/mcp``: acme's endpoint). A path below the endpoint's
    (``/mcp/livez``) is served beside it.

    :raises ValueError: a probe's path is a path of the MCP endpoint, or has URL variables.
    """
    probes = (
        ("MCP_HEALTH_LIVENESS_PATH", settings.health_liveness_path, "livez"),
        ("MCP_HEALTH_READINESS_PATH", settings.health_readiness_path, "readyz"),
    )
    converters = app.url_map.converters
    for key, path, name in probes:
        if path is None:
            continue
        if rule_values(settings.path, path, converters) is not None:
            free = [
                f"such as {candidate!r}"
                for candidate in (f"/{name}", f"/_health/{name}")
                if rule_values(settings.path, candidate, converters) is None
            ]
            raise ValueError(
                f"{key} = {path!r} is a path of the MCP endpoint (MCP_PATH = "
                f"{settings.path!r} matches it): the probe would take the endpoint's place. "
                f"Serve it on a path MCP_PATH does not match, {(free or ['of its own'])[0]}."
            )
        if url_rules.has_variables(path):
            raise ValueError(
                f"{key} = {path!r} has URL variables: a probe is served at one fixed path, "
                f"such as '/{name}'."
            )


def register_health_routes(app: Flask, state: AppState) -> None:
    """Add the probes whose paths the settings name to ``app`` (none by default).

    Their paths are checked first, by :func:`check_health_paths`.
    """
    settings = state.settings
    if settings.health_liveness_path is not None:

        def live() -> Response:
            check_request_host(settings)
            return liveness()

        app.add_url_rule(settings.health_liveness_path, "mcp_liveness", live, methods=["GET"])
    if settings.health_readiness_path is not None:

        def ready() -> Response:
            check_request_host(settings)
            return readiness(state)

        app.add_url_rule(settings.health_readiness_path, "mcp_readiness", ready, methods=["GET"])


__all__ = [
    "check_health_paths",
    "check_request_host",
    "liveness",
    "readiness",
    "register_health_routes",
]
