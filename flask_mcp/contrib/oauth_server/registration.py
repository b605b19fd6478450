"""Where an app keeps its authorization server: ``app.extensions["mcp_oauth_server"]``."""

from __future__ import annotations

import dataclasses
import typing as t

from flask import current_app

if t.TYPE_CHECKING:
    from flask import Flask

    from .server import AppServer

#: The key of :attr:`flask.Flask.extensions` that holds the :class:`Registration`.
EXTENSION_KEY = "mcp_oauth_server"


class Extension(t.Protocol):
    """What the views need of :class:`~.extension.OAuthServer` (which imports them)."""

    scope_descriptions: dict[str, str]

    def current_user_id(self) -> str | None:
        """Return the signed-in user's id, or ``None``."""


@dataclasses.dataclass(frozen=True)
class Registration:
    """What ``app.extensions["mcp_oauth_server"]`` holds: the extension and the app's server."""

    extension: Extension
    app_server: AppServer


def registration(app: Flask | None = None) -> Registration:
    """Return the authorization server registered on ``app`` (default: the current app).

    :raises RuntimeError: none is registered, with what to call.
    """
    target = app if app is not None else current_app
    try:
        return t.cast(Registration, target.extensions[EXTENSION_KEY])
    except KeyError:
        raise RuntimeError(
            "No authorization server is registered on this app: call oauth_server.init_app(app) "
            "(before mcp.init_app(app))."
        ) from None


def app_server(app: Flask | None = None) -> AppServer:
    """Return the :class:`~.server.AppServer` of ``app`` (default: the current app)."""
    return registration(app).app_server
