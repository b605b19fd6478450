"""How the task helpers talk to a server through the official client's session.

The public API of ``mcp`` 2.3.0 carries almost everything: ``ClientSession.send_request``
stamps each era's headers and ``_meta`` (the 2026-07-28 capabilities, the tasks extension
among them), and a request model whose ``name_param`` names ``taskId`` makes it send
``Mcp-Name: <taskId>``, as SEP-2663 requires of ``tasks/*`` over HTTP. The one exception
is :func:`send_unvalidated`.

Every request is bounded by its read timeout from the moment it is sent
(:func:`bounded`): the SDK's own clock starts only once the request is written, and at
2025-11-25 a request that timed out has its ``notifications/cancelled`` POSTed by the
transport's writer itself, so a frozen server holds every later write, off that clock.
"""

from __future__ import annotations

import contextlib
import math
import typing as t

import anyio
import mcp_types as types
from mcp import Client
from mcp import MCPError
from mcp.client import ClientRequestContext
from mcp.client import ClientSession
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import RootModel
from pydantic import TypeAdapter

from .task import TaskError
from .task import TaskStatus

#: -32021: the server needs a client capability (here: the tasks extension) it did not see.
MISSING_CAPABILITY = -32021

_INPUT_REQUEST: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)


class Raw(RootModel[dict[str, t.Any]]):
    """A result as sent: the helpers read the fields of both flavours themselves."""


class TaskParams(types.RequestParams):
    task_id: str


class UpdateTaskParams(TaskParams):
    input_responses: types.InputResponses


class GetTask(types.Request[TaskParams, t.Literal["tasks/get"]]):
    """2026-07-28 ``tasks/get``; ``name_param`` makes the session send ``Mcp-Name: <taskId>``."""

    method: t.Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class UpdateTask(types.Request[UpdateTaskParams, t.Literal["tasks/update"]]):
    """2026-07-28 ``tasks/update`` (with ``Mcp-Name``)."""

    method: t.Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams
    name_param = "taskId"


class CancelTask(types.Request[TaskParams, t.Literal["tasks/cancel"]]):
    """2026-07-28 ``tasks/cancel`` (with ``Mcp-Name``)."""

    method: t.Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class CreatedTask(types.Result):
    """A 2026-07-28 ``CreateTaskResult`` (``resultType: "task"``), as ``TasksExtension``
    claims it on ``tools/call``."""

    result_type: t.Literal["task"] = "task"
    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str = ""
    last_updated_at: str = ""
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


def session_of(client: ClientSession | Client) -> ClientSession:
    """The session of a ``Client``, or the session itself."""
    return client.session if isinstance(client, Client) else client


def is_modern(session: ClientSession) -> bool:
    """Whether the session speaks 2026-07-28 (else the 2025-11-25 handshake era)."""
    version = session.protocol_version
    if version is None:
        raise TaskError(
            "The session is not connected: enter `async with Client(...)` (or call "
            "session.initialize()) before using tasks."
        )
    return version in MODERN_PROTOCOL_VERSIONS


def read_timeout(session: ClientSession, timeout: float | None) -> float | None:
    """``timeout``, or else the session's read timeout (``read_timeout_seconds=``, read from
    ``session._session_read_timeout_seconds``; ``None``: no bound)."""
    if timeout is not None:
        return timeout
    return t.cast("float | None", getattr(session, "_session_read_timeout_seconds", None))


@contextlib.contextmanager
def bounded(method: str, timeout: float | None) -> t.Iterator[None]:
    """Give up on a request after ``timeout`` seconds from the moment it is sent, with the
    SDK's own error (``MCPError`` -32001 "Request ... timed out").

    The SDK's clock starts only once the request is written to its transport, and a
    write can wait on a frozen server (see the module's docstring); giving up cancels
    the request, and the SDK then tries for at most 5 s to tell the server.
    """
    if timeout is None or math.isinf(timeout):
        yield
        return
    try:
        with anyio.fail_after(timeout):
            yield
    except TimeoutError:
        raise MCPError(REQUEST_TIMEOUT, f"Request {method!r} timed out") from None


async def send(
    session: ClientSession, request: t.Any, timeout: float | None = None
) -> dict[str, t.Any]:
    """Send ``request`` through the session's public ``send_request``; the raw result.

    :param timeout: seconds to wait in all (default: the session's read timeout).
    :raises MCPError: the server answered with an error; -32021 (the tasks extension
        was not declared) says how to declare it; -32001: ``timeout`` passed.
    """
    try:
        with bounded(request.method, read_timeout(session, timeout)):
            raw = await session.send_request(request, Raw, request_read_timeout_seconds=timeout)
        return raw.root
    except MCPError as exc:
        if exc.code != MISSING_CAPABILITY:
            raise
        raise MCPError(
            exc.code,
            f"{exc.message} Declare the tasks extension on the client: "
            "Client(url, extensions=[TasksExtension()]), or "
            "ClientSession(read, write, **TasksExtension().session_options()).",
            exc.data,
        ) from exc


async def send_unvalidated(
    session: ClientSession, method: str, params: dict[str, t.Any], timeout: float | None
) -> dict[str, t.Any]:
    """Send a 2025-11-25 request whose result ``ClientSession.send_request`` would refuse.

    The one private API this module uses, pinned to ``mcp`` 2.3.0: ``send_request``
    validates every ``tools/call`` result as a ``CallToolResult``, so the
    ``CreateTaskResult`` (``{"task": {...}}``) of a task-augmented call fails there, and
    ``ClientSession.call_tool`` has no ``task`` parameter. This sends through the
    session's dispatcher (``session._dispatcher.send_raw_request``), with the
    ``MCP-Protocol-Version`` header the session's handshake stamp would add and, when
    ``timeout`` is ``None``, the session's read timeout (see :func:`read_timeout`), as
    :func:`send` waits.

    :raises TaskError: the installed ``mcp`` is not shaped like 2.3.0.
    """
    dispatcher = getattr(session, "_dispatcher", None)
    send_raw = getattr(dispatcher, "send_raw_request", None)
    if send_raw is None:
        raise TaskError(
            "flask_mcp.client needs mcp==2.3.0 for 2025-11-25 tasks (it sends "
            "task-augmented tools/call through ClientSession._dispatcher): "
            "pip install 'Flask-MCP[client]'."
        )
    options: dict[str, t.Any] = {"headers": {MCP_PROTOCOL_VERSION_HEADER: session.protocol_version}}
    timeout = read_timeout(session, timeout)
    if timeout is not None:
        options["timeout"] = timeout
    with bounded(method, timeout):
        return t.cast("dict[str, t.Any]", await send_raw(method, params, options))


async def answer_inputs(
    session: ClientSession, requests: t.Mapping[str, t.Mapping[str, t.Any]]
) -> dict[str, types.InputResponse]:
    """Answer each input request with the session's own callbacks (elicitation, sampling...).

    :raises MCPError: a callback declined, or the client has none for that kind (the
        message then says to give one).
    """
    answers: dict[str, types.InputResponse] = {}
    for key, raw in requests.items():
        request = _INPUT_REQUEST.validate_python(raw)
        meta = request.params.meta if request.params is not None else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        answer = await session.dispatch_input_request(context, request)
        if isinstance(answer, types.ErrorData):
            text = f"The client cannot answer the server's {request.method} request {key!r}: "
            text += answer.message.rstrip(".")
            if answer.message.endswith("not supported"):  # the SDK's answer where none is given
                text += (
                    ". Give the client a callback for it (elicitation_callback=, "
                    "sampling_callback=, list_roots_callback=)"
                )
            raise MCPError(answer.code, text + ".", answer.data)
        answers[key] = answer
    return answers


__all__ = [
    "MISSING_CAPABILITY",
    "CancelTask",
    "CreatedTask",
    "GetTask",
    "Raw",
    "TaskParams",
    "UpdateTask",
    "UpdateTaskParams",
    "answer_inputs",
    "bounded",
    "is_modern",
    "read_timeout",
    "send",
    "send_unvalidated",
    "session_of",
]
