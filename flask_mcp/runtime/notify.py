"""Sending notifications outside a request: to sessions' GET streams and to listen streams."""

from __future__ import annotations

import logging
import typing as t

from .. import signals
from ..backends.base import GENERAL_STREAM
from ..backends.base import MESSAGE

if t.TYPE_CHECKING:
    from .state import AppState

logger = logging.getLogger("flask_mcp")


def deliver_general(state: AppState, session_id: str, message: dict[str, t.Any]) -> None:
    """Queue a message on a session's general (GET) stream."""
    state.backend.append(session_id, GENERAL_STREAM, MESSAGE, message)
    signals.send(
        signals.notification_sent, state.app, method=message.get("method"), session_id=session_id
    )


def deliver_general_many(
    state: AppState, session_ids: t.Iterable[str], message: dict[str, t.Any]
) -> None:
    """Queue a message on the general streams of many sessions (one round trip on Redis)."""
    ids = list(session_ids)
    state.backend.append_many([(sid, GENERAL_STREAM, MESSAGE, message) for sid in ids])
    for session_id in ids:
        signals.send(
            signals.notification_sent,
            state.app,
            method=message.get("method"),
            session_id=session_id,
        )


def publish(state: AppState, method: str, params: dict[str, t.Any] | None = None) -> None:
    """Send a change notification to every listen stream of the app's server, in every worker."""
    try:
        state.backend.publish(state.listen_channel, {"method": method, "params": params or {}})
    except Exception:
        logger.exception("Could not publish %s to the listen streams", method)


__all__ = ["deliver_general", "deliver_general_many", "publish"]
