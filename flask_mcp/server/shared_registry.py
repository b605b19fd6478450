"""Runtime changes to the registry, seen by every worker sharing a Redis backend.

Declarations made at import time run in every worker anyway. A change made
while serving (``add_tool``, ``remove_tool``, ``enable``, ``disable``, the same
for resources and prompts, ``register_blueprint``, ``tool_from_view``) is applied
in the worker that made it, which tells every session (they live in Redis), and
is appended as an *operation* to a list in Redis. Every worker replays the
operations it has not seen before it serves an MCP request (one ``LLEN`` per
request), without telling the sessions again.

An operation names its handler by import path (``module:qualname``); a handler
that cannot be found again by that path (a lambda, a closure, a function defined
in another function) cannot be replayed elsewhere, so the change stays in the
worker that made it, with a :class:`ProcessLocalWarning`.
"""

from __future__ import annotations

import contextvars
import importlib
import json
import logging
import os
import threading
import typing as t
import warnings

from .declarations import Declarations
from .resource_security import DEFAULT_RESOURCE_SECURITY

if t.TYPE_CHECKING:
    from ..runtime.state import AppState

logger = logging.getLogger("flask_mcp")

#: Seconds the operation log is kept after its last change.
LOG_TTL = 7 * 24 * 3600
#: True while a worker replays another worker's operation.
replaying: contextvars.ContextVar[bool] = contextvars.ContextVar("mcp_replaying", default=False)
#: True while a face method adds records that it shares as one operation of its own.
unshared: contextvars.ContextVar[bool] = contextvars.ContextVar("mcp_unshared", default=False)


class ProcessLocalWarning(UserWarning):
    """A change made while serving stays in this worker: its handler has no import path."""


def import_path(obj: t.Any) -> str | None:
    """Return ``module:qualname`` if importing it gives back ``obj``, else ``None``."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        return None
    try:
        return f"{module}:{qualname}" if resolve(f"{module}:{qualname}") is obj else None
    except Exception:
        return None


def resolve(path: str) -> t.Any:
    """Import the object at ``module:qualname``."""
    module, _, qualname = path.partition(":")
    target: t.Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _jsonable(value: t.Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


class RegistrySync:
    """The operation log of one app's server in its Redis backend.

    :param server: the :class:`~flask_mcp.MCP` whose registry is kept in step.
    :param server_name: the server's name, part of the log's key.
    :param state: the app's state; its backend must have ``client`` and ``prefix``
        (:class:`~flask_mcp.backends.redis.RedisBackend`).
    """

    def __init__(self, server: SharedDeclarations, state: AppState, server_name: str) -> None:
        self.server = server
        self.state = state
        backend: t.Any = state.backend
        self.client = backend.client
        # The workers of one master (gunicorn, uWSGI) share a log; a new master starts a new one.
        generation = os.getppid()
        self.key = f"{backend.prefix}registry:{server_name}:{generation}:ops"
        self.applied = 0
        self.own: set[int] = set()
        self._lock = threading.Lock()

    def record(self, op: dict[str, t.Any]) -> None:
        """Append an operation this worker already applied."""
        with self._lock:
            seq = int(self.client.rpush(self.key, json.dumps(op)))
            self.client.expire(self.key, LOG_TTL)
            self.own.add(seq)
        self.catch_up()

    def catch_up(self) -> int:
        """Replay the operations of other workers not seen yet; return how many."""
        with self._lock:
            count = int(self.client.llen(self.key))
            if count <= self.applied:
                return 0
            raw = self.client.lrange(self.key, self.applied, count - 1)
            start, self.applied = self.applied, count
            done = 0
            token = replaying.set(True)
            try:
                for offset, item in enumerate(raw):
                    if start + offset + 1 in self.own:
                        continue
                    try:
                        self.server.apply_operation(json.loads(item), self.state)
                        done += 1
                    except Exception:
                        logger.exception(
                            "Could not replay a registry change made by another worker"
                        )
            finally:
                replaying.reset(token)
            return done


class SharedDeclarations(Declarations):
    """:class:`Declarations` whose runtime changes reach every worker of a Redis backend."""

    def _sharing(self) -> list[RegistrySync]:
        """Return the logs to record a change in: none at import time or while replaying."""
        raise NotImplementedError

    def _share(self, op: dict[str, t.Any] | None, what: str) -> None:
        syncs = self._sharing()
        if not syncs:
            return
        if op is None:
            warnings.warn(
                f"{what} was changed while serving, but cannot be replayed by the other workers"
                " (its handler has no import path, or an option has no JSON form): it exists in"
                " this worker only. Use a module-level function, or declare it at import time.",
                ProcessLocalWarning,
                stacklevel=3,
            )
            return
        for sync in syncs:
            try:
                sync.record(op)
            except Exception:
                logger.exception("Could not share the change of %s with the other workers", what)

    def _handler_op(self, op: str, fn: t.Any, args: dict[str, t.Any]) -> dict[str, t.Any] | None:
        ref = import_path(fn)
        kwargs = {k: sorted(v) if isinstance(v, (set, frozenset)) else v for k, v in args.items()}
        if ref is None or not _jsonable(kwargs):
            return None
        return {"op": op, "ref": ref, "kwargs": kwargs}

    def add_tool(self, fn: t.Any, **kwargs: t.Any) -> t.Any:
        tool = super().add_tool(fn, **kwargs)
        if self._sharing():
            self._share(self._handler_op("add_tool", fn, kwargs), f"Tool {tool.name!r}")
        return tool

    def add_resource(self, fn: t.Any, uri: str, **kwargs: t.Any) -> t.Any:
        record = super().add_resource(fn, uri, **kwargs)
        if self._sharing():
            security = kwargs.pop("security", DEFAULT_RESOURCE_SECURITY)
            op = None
            if security is DEFAULT_RESOURCE_SECURITY or security is None:
                op = self._handler_op("add_resource", fn, {**kwargs, "uri": uri})
                if op is not None and security is None:
                    op["no_security"] = True
            self._share(op, f"Resource {uri!r}")
        return record

    def add_prompt(self, fn: t.Any, **kwargs: t.Any) -> t.Any:
        prompt = super().add_prompt(fn, **kwargs)
        if self._sharing():
            self._share(self._handler_op("add_prompt", fn, kwargs), f"Prompt {prompt.name!r}")
        return prompt

    def remove_tool(self, name: str) -> bool:
        found = super().remove_tool(name)
        if found:
            self._share({"op": "remove_tool", "key": name}, f"Tool {name!r}")
        return found

    def remove_resource(self, uri: str) -> bool:
        found = super().remove_resource(uri)
        if found:
            self._share({"op": "remove_resource", "key": uri}, f"Resource {uri!r}")
        return found

    def remove_prompt(self, name: str) -> bool:
        found = super().remove_prompt(name)
        if found:
            self._share({"op": "remove_prompt", "key": name}, f"Prompt {name!r}")
        return found

    def apply_operation(self, op: dict[str, t.Any], state: AppState) -> None:
        """Apply an operation recorded by another worker."""
        kind, kwargs = op["op"], dict(op.get("kwargs") or {})
        if kind == "add_tool":
            self.add_tool(resolve(op["ref"]), **kwargs)
        elif kind == "add_resource":
            uri = kwargs.pop("uri")
            if op.get("no_security"):
                kwargs["security"] = None
            self.add_resource(resolve(op["ref"]), uri, **kwargs)
        elif kind == "add_prompt":
            self.add_prompt(resolve(op["ref"]), **kwargs)
        elif kind in ("remove_tool", "remove_resource", "remove_prompt"):
            getattr(self, kind)(op["key"])
        else:
            self.apply_face_operation(op, state)

    def apply_face_operation(self, op: dict[str, t.Any], state: AppState) -> None:
        """Apply an operation of the face (``enable``, ``register_blueprint``...)."""
        raise ValueError(f"Unknown registry operation {op.get('op')!r}.")


__all__ = [
    "LOG_TTL",
    "ProcessLocalWarning",
    "RegistrySync",
    "SharedDeclarations",
    "import_path",
    "replaying",
    "unshared",
    "resolve",
]
