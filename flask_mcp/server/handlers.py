"""What a handler is: its entry point (sync or ``async def``), its ``Context`` parameter, its docs.

Done once, at registration, so that a call pays nothing for it.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing as t

from .call import running_handler
from .context import Context

Handler = t.Callable[..., t.Any]
#: Names a handler's annotations may use without importing them (app factories often
#: import ``Context`` inside the function that defines the handlers).
LOCALNS: t.Mapping[str, t.Any] = {"Context": Context}

#: What each kind of handler returns instead of yielding.
_RETURN_INSTEAD = {
    "tool": "return the whole result (a str, a list, a dict or a ToolResult)",
    "resource": "return the whole contents (a str, bytes, or a list of them)",
    "prompt": "return the whole list of messages",
    "completion": "return the whole list of values",
}


def context_parameter(fn: Handler) -> str | None:
    """Return the name of the parameter annotated with :class:`~flask_mcp.Context`, if any.

    Annotations are resolved (string ones too) and compared by class: ``Context``,
    a subclass, ``Context | None`` and ``Annotated[Context, ...]`` count; a
    class of another module that happens to be named ``Context`` does not. An
    annotation that cannot be resolved does not count. Done once, at registration.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    hints = _resolved_hints(fn, signature)
    for name, param in signature.parameters.items():
        if _is_context(hints.get(name, param.annotation)):
            return name
    return None


def _resolved_hints(fn: Handler, signature: inspect.Signature) -> dict[str, t.Any]:
    """Resolve the parameters' annotations, one by one where the whole set fails.

    ``Context`` resolves even when it was imported inside a function (app
    factories often do), unless the module defines its own ``Context``: the
    same rule as the input schema's.
    """
    target: t.Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    globalns = getattr(inspect.unwrap(target), "__globals__", {})
    localns = {} if "Context" in globalns else {"Context": Context}
    try:
        return t.get_type_hints(target, localns=localns, include_extras=True)
    except Exception:  # an unresolvable hint elsewhere, or not a function
        pass
    hints = {}
    for name, param in signature.parameters.items():
        annotation = param.annotation
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(globalns), localns)  # as get_type_hints does
            except Exception:
                continue
        hints[name] = annotation
    return hints


def _is_context(annotation: t.Any) -> bool:
    if t.get_origin(annotation) is t.Annotated:
        annotation = t.get_args(annotation)[0]
    if t.get_origin(annotation) in (t.Union, types.UnionType):
        members = [a for a in t.get_args(annotation) if a is not type(None)]
        return bool(members) and all(_is_context(member) for member in members)
    try:
        return isinstance(annotation, type) and issubclass(annotation, Context)
    except TypeError:
        return False


def describe_doc(fn: Handler) -> str | None:
    """Return the description part of a docstring (before any ``:param`` field)."""
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    lines = []
    for line in doc.splitlines():
        if line.lstrip().startswith(":"):
            break
        lines.append(line)
    return "\n".join(lines).strip() or None


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


__all__ = [
    "LOCALNS",
    "Handler",
    "context_parameter",
    "describe_doc",
    "handler_entry",
]
