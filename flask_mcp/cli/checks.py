"""``flask mcp check``: the configuration, the backend and the JWKS, each with how to fix it."""

from __future__ import annotations

import typing as t
import warnings

from ..config import warn_unknown_keys
from ..errors import BackendUnavailable
from ..errors import ConfigWarning
from ..transport.path_args import EndpointError
from ..transport.path_args import match_endpoint

if t.TYPE_CHECKING:
    from flask import Flask

    from ..extension import MCP

#: ``(passed, text)``: what was checked, or what to fix.
Check = tuple[bool, str]


def run_checks(mcp: MCP, app: Flask, path: str | None = None) -> t.Iterator[Check]:
    """Check the server on ``app``; yield one line per check.

    :param path: the ``--path`` given, checked against ``MCP_PATH`` when given.
    """
    state = mcp.state(app)
    settings = state.settings
    yield True, f"MCP_* settings are valid; the endpoint is {settings.path}"
    if path is not None:
        yield _path(app, settings.path, path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConfigWarning)
        warn_unknown_keys(app.config)
    for warning in caught:
        yield False, str(warning.message)
    yield _offered(mcp.registry)
    if settings.state_key or app.secret_key:
        yield True, "2026-07-28 requestState is sealed with a key (MCP_STATE_KEY or SECRET_KEY)"
    else:
        yield (
            False,
            (
                "no SECRET_KEY nor MCP_STATE_KEY: 2026-07-28 multi-round requests cannot be "
                "sealed; "
                "set app.config['SECRET_KEY'] to a random value (secrets.token_hex(32))"
            ),
        )
    yield _backend(state.backend, settings.backend)
    yield from _auth(state, settings, app)


def _offered(registry: t.Any) -> Check:
    """What the server offers: tools, resources, resource templates and prompts, counted."""
    counts = [
        (len(registry.tools), "tool"),
        (len(registry.resources), "resource"),
        (len(registry.templates), "resource template"),
        (len(registry.prompts), "prompt"),
    ]
    offered = ", ".join(f"{count} {noun}{'' if count == 1 else 's'}" for count, noun in counts)
    if any(count for count, _ in counts):
        return True, f"the server offers {offered}"
    return (
        False,
        f"the server offers {offered}: declare some with @mcp.tool(), @mcp.resource()...",
    )


def _path(app: Flask, rule: str, path: str) -> Check:
    try:
        found = match_endpoint(app, rule, path)
    except EndpointError as exc:
        return False, f"--path: {exc}"
    values = ", ".join(f"{name}={value!r}" for name, value in found.path_args.items())
    return True, f"--path {path} is the MCP endpoint" + (f" ({values})" if values else "")


def _backend(backend: t.Any, configured: t.Any) -> Check:
    name = configured if isinstance(configured, str) else type(backend).__name__
    try:
        backend.check()
    except BackendUnavailable as exc:
        return False, f"the backend does not answer: {exc}"
    except Exception as exc:
        return False, f"the backend {name} failed: {exc}; check MCP_BACKEND"
    if not backend.multiprocess:
        return True, (
            f"the backend {name} answers (one process only: set MCP_BACKEND=redis://... to run "
            "several workers)"
        )
    return True, f"the backend answers ({backend.where})"


def _auth(state: t.Any, settings: t.Any, app: Flask) -> t.Iterator[Check]:
    """Authorization: off, or who checks the tokens (an authorizer may say, with ``checks``)."""
    authenticator = state.authenticator
    if authenticator is None:
        yield True, "authorization is off (MCP_AUTH_RESOURCE is not set)"
        return
    yield True, f"authorization is on for {settings.auth_resource}"
    described = getattr(authenticator.authorizer, "checks", None)
    if callable(described):  # the built-in authorization server's, for one
        yield from described(app)
        return
    keys = getattr(authenticator.authorizer, "keys", None)
    if keys is None or not hasattr(keys, "fetch"):
        yield True, "tokens are checked by the app's own authorizer"
        return
    try:
        found = keys.fetch()
    except (OSError, ValueError) as exc:
        yield (
            False,
            (
                f"cannot fetch the JWKS at {keys.url}: {exc}; check MCP_AUTH_JWT_JWKS_URL and that "
                "the authorization server is reachable from here"
            ),
        )
        return
    if not found:
        yield False, f"the JWKS at {keys.url} holds no keys: no token can be verified"
        return
    yield True, f"the JWKS at {keys.url} holds {len(found)} key(s)"


__all__ = ["Check", "run_checks"]
