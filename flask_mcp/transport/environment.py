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

import typing as t

from flask import copy_current_request_context
from flask import g
from flask import has_request_context

if t.TYPE_CHECKING:
    from flask import Flask

R = t.TypeVar("R")


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


__all__ = ["bind_to_request"]
