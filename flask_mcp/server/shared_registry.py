"""Runtime changes to the registry, seen by every worker sharing a Redis backend.

Declarations made at import time run in every worker anyway. A change made
while serving (``add_tool``, ``remove_tool``, ``enable``, ``disable``, the same
for resources and prompts, ``register_blueprint``, a change an integration makes in
:meth:`SharedDeclarations.integration_change`, such as a view tool) is made
in one worker, in this order:

1. It replays the operations of the other workers it has not seen yet, so that
   the change meets every change made before it, in any worker. Else a change
   that follows another worker's closely (enable ``x`` there, remove ``x``
   here) met a registry that had not seen the first one (``x`` still disabled
   here: removing it changed no list) and no session heard of it.
2. It applies the change, appends it as an *operation* to a list in Redis and
   announces it on the backend's pub/sub.
3. Then it tells every session (they live in Redis) that the list changed:
   the change is in the log, and announced, before any client hears of it. An
   operation of another worker appended between steps 1 and 2 (a change made
   at the same moment) is told again here.

Every worker replays the operations it has not seen before it serves an MCP
request, without telling the sessions again.

The log lives in the backend's shared log (:meth:`~flask_mcp.backends.base.Backend.shared_log`,
a backend declaring :data:`~flask_mcp.backends.base.SHARED_LOG`).

An operation names its handler by import path (``module:qualname``); a handler
that cannot be found again by that path (a lambda, a closure, a function defined
in another function) cannot be replayed elsewhere, so the change stays in the
worker that made it, with a :class:`ProcessLocalWarning`.

The log is read only when a worker announced a change on the backend's
pub/sub channel, or when the subscription may have missed an announcement (it
was made anew after a lost connection): a request costs no round trip for the
log otherwise, and a Redis that stops answering does not make each request wait
for the log before it waits for its session.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import json
import logging
import os
import threading
import time
import typing as t
import warnings

from flask import has_request_context

from ..errors import BackendUnavailable
from ..runtime.concurrency import sleep
from ..runtime.concurrency import spawn
from .blueprints import MCPBlueprint
from .blueprints import default_uri_prefix
from .blueprints import register_blueprint
from .declarations import Declarations
from .declarations import tagset
from .resource_security import DEFAULT_RESOURCE_SECURITY

if t.TYPE_CHECKING:
    from flask import Flask

    from ..runtime.state import AppState

logger = logging.getLogger("flask_mcp")

#: Seconds between two tries of a read that failed (Redis unreachable), and how long the
#: watcher waits for a message before it looks whether its subscription was made anew.
RECHECK = 1.0
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
    :param state: the app's state; its backend must declare
        :data:`~flask_mcp.backends.base.SHARED_LOG`.
    """

    def __init__(self, server: SharedDeclarations, state: AppState, server_name: str) -> None:
        self.server = server
        self.state = state
        # The workers of one master (gunicorn, uWSGI) share a log; a new master starts a new one.
        generation = os.getppid()
        self.log = state.backend.shared_log(f"registry:{server_name}:{generation}")
        self.channel = f"flask-mcp:{server_name}:registry"
        self.applied = 0
        #: Log positions of this worker's own changes that it has not read past yet.
        self.own: set[int] = set()
        self._lock = threading.Lock()
        self._pid = 0
        #: Announcements heard (by the watcher), and how many of them the last read covered.
        self._heard = 1
        self._read = 0
        #: After a failed read: when the next request may try again.
        self._retry_at = 0.0

    def record(self, op: dict[str, t.Any]) -> None:
        """Append an operation this worker already applied, and tell the other workers."""
        with self._lock:
            seq = self.log.append(json.dumps(op))
            self.own.add(seq)
        self.state.backend.publish(self.channel, {"seq": seq})
        self.catch_up()

    def before_request(self) -> None:
        """Replay what changed, before this worker serves an MCP request.

        The log is read when a worker announced a change on the backend's pub/sub
        (heard by a watcher task started in each process), or when the watcher's
        subscription was made anew (an announcement may have been lost meanwhile);
        else a request reads nothing. A request that comes while another one reads
        waits for that read: it must not be served from the registry the read is
        about to change. A read that fails is tried again :data:`RECHECK` seconds
        later, not by every request.
        """
        if self._pid != os.getpid():
            self._pid, self._heard, self._read = os.getpid(), 1, 0
            spawn(self._watch)
        if self._heard == self._read or time.monotonic() < self._retry_at:
            return
        with self.server.registry.changing, self._lock:  # the order of _changing
            heard = self._heard
            if heard == self._read:
                return  # another request read the log meanwhile
            try:
                self._replay()
            except BaseException:
                self._retry_at = time.monotonic() + RECHECK
                raise
            self._read = heard

    def _watch(self) -> None:
        pid = os.getpid()
        while self._pid == pid:
            try:
                subscription = self.state.backend.subscribe(self.channel)
                try:
                    seen = subscription.generation
                    self._heard += 1  # subscribed (anew): read what was announced meanwhile
                    while self._pid == pid:
                        message = subscription.get(timeout=RECHECK)
                        generation = subscription.generation
                        if message is not None or generation != seen:
                            seen = generation  # made anew: announcements may have been lost
                            self._heard += 1
                finally:
                    subscription.close()
            except Exception:
                logger.warning("The registry watcher lost its subscription; it retries.")
                sleep(RECHECK)

    def catch_up(self) -> int:
        """Replay the operations of other workers not seen yet; return how many."""
        with self.server.registry.changing, self._lock:
            return self._replay()

    def _replay(self) -> int:
        raw = self.log.read(self.applied)
        if not raw:
            return 0
        start = self.applied
        self.applied = start + len(raw)
        done = 0
        token = replaying.set(True)
        try:
            for seq, item in enumerate(raw, start + 1):
                if seq in self.own:  # applied when made; never read again
                    self.own.discard(seq)
                    continue
                try:
                    self.server.apply_operation(json.loads(item), self.state)
                    done += 1
                except Exception:
                    logger.exception("Could not replay a registry change made by another worker")
        finally:
            replaying.reset(token)
        return done


class SharedDeclarations(Declarations):
    """:class:`Declarations` whose runtime changes reach every worker of a Redis backend.

    Also blueprints (:meth:`register_blueprint`) and :meth:`enable`/:meth:`disable`.
    """

    _states: t.MutableMapping[Flask, AppState]
    _syncs: t.MutableMapping[Flask, RegistrySync]

    @contextlib.contextmanager
    def _changing(self) -> t.Iterator[None]:
        """Make a change in the block: the other workers' changes replayed first, the
        sessions told the lists changed once it is in the log (see the module doc), under
        the registry's :attr:`~flask_mcp.server.registry.Registry.changing` lock."""
        with self.registry.changing:
            syncs = self._sharing()
            for sync in syncs:
                _logged(sync.catch_up, sync)
            if not syncs:
                yield
                return
            with self.registry.batch():  # list_changed waits for the operation's append
                yield

    @contextlib.contextmanager
    def integration_change(self, key: str, what: str) -> t.Iterator[dict[str, t.Any]]:
        """Make, in the block, a change of the integration at ``app.extensions[key]`` that the
        other workers replay.

        The block fills the dict it gets with JSON values; the other workers call
        ``app.extensions[key].apply_operation(data, app)`` with it. Records added in the
        block are not shared one by one. Left empty while serving, the change stays in
        this worker, with a :class:`ProcessLocalWarning` naming ``what``.
        """
        with self._changing():
            data: dict[str, t.Any] = {}
            token = unshared.set(True)
            try:
                yield data
            finally:
                unshared.reset(token)
            if self._sharing():
                op = {"op": "integration", "key": key, "data": data}
                self._share(op if data and _jsonable(data) else None, what)

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
        with self._changing():
            tool = super().add_tool(fn, **kwargs)
            if self._sharing():
                self._share(self._handler_op("add_tool", fn, kwargs), f"Tool {tool.name!r}")
        return tool

    def add_resource(self, fn: t.Any, uri: str, **kwargs: t.Any) -> t.Any:
        with self._changing():
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
        with self._changing():
            prompt = super().add_prompt(fn, **kwargs)
            if self._sharing():
                op = self._handler_op("add_prompt", fn, kwargs)
                self._share(op, f"Prompt {prompt.name!r}")
        return prompt

    def remove_tool(self, name: str) -> bool:
        with self._changing():
            found = super().remove_tool(name)
            if found:
                self._share({"op": "remove_tool", "key": name}, f"Tool {name!r}")
        return found

    def remove_resource(self, uri: str) -> bool:
        with self._changing():
            found = super().remove_resource(uri)
            if found:
                self._share({"op": "remove_resource", "key": uri}, f"Resource {uri!r}")
        return found

    def remove_prompt(self, name: str) -> bool:
        with self._changing():
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

    # -- blueprints, enable and disable ----------------------------------------------

    def register_blueprint(
        self, blueprint: MCPBlueprint, *, prefix: str = "", uri_prefix: str | None = None
    ) -> None:
        """Add the tools, resources, prompts, completions and views of an :class:`MCPBlueprint`.

        Tool and prompt names (and resource names) get ``prefix``; resource URIs,
        templates and the URIs of what the blueprint carries for extensions (the views of
        :meth:`MCPBlueprint.ui`, the skills of :meth:`MCPBlueprint.skills_folder`) get
        ``uri_prefix`` as their first path segment (``invoice://{id}`` ->
        ``invoice://billing/{id}``), by default the prefix without its trailing ``_``,
        ``-`` or ``.``; ``uri_prefix=""`` keeps them. A tool's ``ui=`` naming one of the
        blueprint's views follows it. The server's extensions declare what the blueprint
        carries for them first (:meth:`flask_mcp.Extension.register_blueprint`), then
        check the tools' options (``ui=``, ``visibility=``...). A registration that fails
        leaves nothing behind. Works before and after ``init_app``; a blueprint may be
        registered several times under different prefixes.

        :raises ValueError: a prefixed name or URI is already registered (the blueprint
            itself, registered again with the same prefixes, as by an app factory: register
            it once, at import time), or a prefixed tool name is invalid.
        :raises TypeError: a tool option that no added extension defines.
        :raises LookupError: the blueprint carries declarations for an extension this
            server has not added.
        """
        segment = default_uri_prefix(prefix) if uri_prefix is None else uri_prefix
        # one list_changed per kind, for the extensions' declarations (views, skills) too
        with self._changing(), self.registry.batch():
            for extension_id in blueprint.carried:
                self.blueprint_extension(blueprint, extension_id)
            undo: list[t.Callable[[], None]] = []
            token = unshared.set(True)  # the blueprint's own operation carries it all
            try:
                for hook in list(self.registry.blueprint_hooks):
                    step = hook(self, blueprint, prefix, segment)
                    if step is not None:
                        undo.append(step)
                register_blueprint(self.registry, blueprint, prefix, uri_prefix)
            except BaseException:
                for step in reversed(undo):
                    step()
                raise
            finally:
                unshared.reset(token)
            if self._sharing():
                ref = blueprint_path(blueprint)
                op = ref and {"op": "blueprint", "ref": ref, "prefix": prefix, "uri": uri_prefix}
                self._share(op or None, f"Blueprint {blueprint.name!r}")

    def blueprint_extension(self, blueprint: MCPBlueprint, extension_id: str) -> None:
        """Make sure the extension a blueprint carries declarations for is added.

        :class:`~flask_mcp.MCP` adds a built-in extension on first use (Skills).

        :raises LookupError: it is not added; the message says how to add it.
        """
        if extension_id not in self.registry.extension_capabilities:
            raise LookupError(
                f"The MCP blueprint {blueprint.name!r} carries declarations for the extension "
                f"{extension_id!r}, which this server has not added: add it with "
                "mcp.add_extension(...) before registering the blueprint."
            )

    def enable(self, *names: str, tags: t.Iterable[str] = ()) -> list[tuple[str, str]]:
        """Enable the tools, prompts, resources and templates named or tagged.

        A name is a tool or prompt name, a resource URI or a template text.
        Clients are told the lists changed. Return the (kind, key) pairs enabled.

        :raises LookupError: a name or tag matches nothing registered.
        :raises ValueError: an extension refuses it (MCP Apps: a tool whose view stays
            disabled); the message says what to enable with it. Nothing is enabled.
        """
        return self._set_enabled(True, names, tagset(tags))

    def disable(self, *names: str, tags: t.Iterable[str] = ()) -> list[tuple[str, str]]:
        """Disable the tools, prompts, resources and templates named or tagged.

        A disabled record leaves its list and cannot be called, read or
        completed (clients get the same error as for an unknown name) until it
        is enabled again; its name stays taken. Return the (kind, key) pairs
        disabled.

        :raises LookupError: a name or tag matches nothing registered.
        :raises ValueError: an extension refuses it (MCP Apps: the view of a tool that
            stays enabled); the message says what to disable with it. Nothing is disabled.
        """
        return self._set_enabled(False, names, tagset(tags))

    def _set_enabled(
        self, enabled: bool, names: t.Iterable[str], tags: t.Iterable[str]
    ) -> list[tuple[str, str]]:
        with self._changing():
            unknown = [name for name in [*names, *tags] if not self.registry.known(name)]
            if unknown:
                raise LookupError(
                    f"Nothing registered is named or tagged {', '.join(map(repr, unknown))}; "
                    "pass a tool or prompt name, a resource URI, a template text, or tags=[...]."
                )
            moved: list[tuple[str, str]] = list(
                self.registry.set_enabled(enabled, names, tags, checked=True)
            )
            op: dict[str, t.Any] = {
                "op": "enable" if enabled else "disable",
                "names": list(names),
                "tags": list(tags),
            }
            self._share(op, "The enabled set")
        return moved

    def _sharing(self) -> list[RegistrySync]:
        if replaying.get() or unshared.get() or not self._syncs:
            return []
        serving = has_request_context() or any(
            state.supervisor is not None for state in self._states.values()
        )
        return list(self._syncs.values()) if serving else []

    def apply_face_operation(self, op: dict[str, t.Any], state: AppState) -> None:
        """Apply another worker's ``enable``, ``disable``, ``blueprint`` or ``integration`` op."""
        kind = op["op"]
        if kind in ("enable", "disable"):
            self.registry.set_enabled(kind == "enable", op["names"], op["tags"])
        elif kind == "blueprint":
            self.register_blueprint(resolve(op["ref"]), prefix=op["prefix"], uri_prefix=op["uri"])
        elif kind == "integration":
            owner = state.app.extensions.get(op["key"]) if state.app is not None else None
            apply = getattr(owner, "apply_operation", None)
            if apply is None:
                raise ValueError(
                    f"Another worker changed the registry through {op['key']!r}, which is not "
                    "registered on this app: call its init_app in every worker."
                )
            apply(op["data"], state.app)
        else:
            raise ValueError(f"Unknown registry operation {kind!r}.")


def catch_up(sync: RegistrySync) -> None:
    """Run :meth:`RegistrySync.before_request`, logging (not raising) a failure."""
    _logged(sync.before_request, sync)


def _logged(replay: t.Callable[[], object], sync: RegistrySync) -> None:
    """Run ``replay`` (a catch-up of ``sync``), logging (not raising) a failure."""
    try:
        replay()
    except Exception as exc:
        if isinstance(exc, (*sync.state.backend.unavailable_errors, BackendUnavailable)):
            # An outage, not a bug: one line; the next check (RECHECK) replays what was missed.
            logger.warning("Could not replay the other workers' registry changes: %s", exc)
        else:
            logger.exception("Could not replay the registry changes of the other workers")


def blueprint_path(blueprint: MCPBlueprint) -> str | None:
    if not blueprint.import_name:
        return None
    module = importlib.import_module(blueprint.import_name)
    names = [name for name, value in vars(module).items() if value is blueprint]
    return f"{blueprint.import_name}:{names[0]}" if names else None


__all__ = [
    "ProcessLocalWarning",
    "RegistrySync",
    "SharedDeclarations",
    "blueprint_path",
    "catch_up",
    "import_path",
    "replaying",
    "unshared",
    "resolve",
]
