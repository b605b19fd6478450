"""Where handlers run: the request context, ``g``, and ``async def`` handlers.

Every handler runs inside a Flask request context of the request that carries
its call, whether it runs in the view (a handler without a ``Context``
parameter) or in a greenlet or thread of its own (one with a ``Context``, so
that its messages can stream while it runs). For the latter, the view copies
its request context with Flask's :func:`~flask.copy_current_request_context`
and carries ``g`` over, because ``g`` lives on the app context, which the copy
does not share. See ``docs/handlers.md``.
"""

from __future__ import annotations

import functools
import inspect
import typing as t

from flask import copy_current_request_context
from flask import g
from flask import has_request_context

from .call import running_handler

if t.TYPE_CHECKING:
    from flask import Flask

R = t.TypeVar("R")

#: What each kind of handler returns instead of yielding.
_RETURN_INSTEAD = {
    "tool": "return the whole result (a str, a list, a dict or a ToolResult)",
    "resource": "return the whole contents (a str, bytes, or a list of them)",
    "prompt": "return the whole list of messages",
    "completion": "return the whole list of values",
}


def bind_to_request(app: Flask | None, fn: t.Callable[[], R]) -> t.Callable[[], R]:
    """Return ``fn`` bound to a copy of the current request context, with ``g`` carried over.

    Call it in the view, at spawn time; call what it returns in the spawned
    greenlet or thread. The copy shares the request object and the session
    with the view; ``g`` is copied shallowly (its attributes are the same
    objects). When the call ends, the copy is popped like any request
    context, so ``teardown_request`` and ``teardown_appcontext`` functions
    run for it too. Outside a request (no view to copy) ``fn`` runs in a
    fresh app context, or as it is without an app.
    """
    if not has_request_context():
        if app is None:
            return fn

        def in_app() -> R:
            with app.app_context():
                return fn()

        return in_app
    carried = {name: g.get(name) for name in g}

    def with_g() -> R:
        for name, value in carried.items():
            setattr(g, name, value)
        return fn()

    return copy_current_request_context(with_g)


def handler_entry(fn: t.Callable[..., t.Any], kind: str, name: str) -> t.Callable[..., t.Any]:
    """Check a handler at registration and return the callable the dispatcher calls.

    Plain functions are returned unchanged. An ``async def`` handler is
    returned wrapped so that each call goes through the app's
    :meth:`~flask.Flask.ensure_sync`, as Flask runs async views (the app of
    the running call; asgiref's ``async_to_sync`` without one).

    :param kind: ``"tool"``, ``"resource"``, ``"prompt"`` or ``"completion"``.
    :param name: the handler's name, for error messages.
    :raises TypeError: ``fn`` is a generator or async generator function.
    :raises RuntimeError: ``fn`` is ``async def`` and asgiref is not installed.
    """
    target = fn
    if not (inspect.isroutine(fn) or isinstance(fn, functools.partial)):
        target = getattr(fn, "__call__", fn)  # noqa: B004 (a callable object's method)
    if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
        instead = _RETURN_INSTEAD.get(kind, "return the whole result")
        raise TypeError(
            f"The {kind} {name!r} is a generator function (it yields); a handler's result is "
            f"sent once, so {instead} instead of yielding. To report progress while it "
            "runs, declare a `ctx: Context` parameter and call ctx.progress()."
        )
    if not inspect.iscoroutinefunction(target):
        return fn
    try:
        import asgiref.sync  # noqa: F401
    except ImportError:
        raise RuntimeError(
            f"The {kind} {name!r} is an async def function; Flask runs those through "
            'app.ensure_sync, which needs asgiref: pip install "flask[async]".'
        ) from None

    @functools.wraps(fn)
    def run_async(*args: t.Any, **kwargs: t.Any) -> t.Any:
        call = running_handler.get(None)
        app = None if call is None else call.state.app
        if app is not None:
            return app.ensure_sync(target)(*args, **kwargs)
        from asgiref.sync import async_to_sync

        return async_to_sync(target)(*args, **kwargs)

    return run_async
