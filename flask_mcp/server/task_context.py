"""Inside a task: the ``tools/call`` it runs, its ``Context`` and how that asks the client.

The handler of a task runs as a plain ``tools/call`` (:class:`TaskCall`) with a
:class:`TaskContext`: ``progress()`` sets the task's ``statusMessage``, a 2025-11-25
task's log messages wait in its record for ``tasks/result`` (:func:`take_logs`), requests
to the client become the task's ``inputRequests`` (status ``input_required``) until
``tasks/update`` (2026-07-28) or ``tasks/result`` (2025-11-25) brings the answers through
the task record, wherever the handler runs (this worker, another one, a Celery worker).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing as t

from .. import protocol
from .. import signals
from ..auth import AuthInfo
from ..backends.base import best_effort
from ..backends.task_store import TaskQuotaExceeded
from ..errors import BackendUnavailable
from ..errors import ClientRequestError
from ..errors import InvalidParams
from ..errors import RequestCancelled
from ..protocol.hosts import client_network
from ..runtime import concurrency as _concurrency
from ..runtime.tasks import EXTENSION as EXTENSION
from ..runtime.tasks import RELATED_TASK
from ..runtime.tasks import TERMINAL
from ..runtime.tasks import V2025
from ..runtime.tasks import V2026
from ..runtime.tasks import owner_key
from ..runtime.tasks import status_changed
from ..runtime.tasks import store_of
from ..runtime.tasks import touch
from .call import Call
from .context import ASKABLE_METHODS
from .context import EXPECTED_ANSWERS
from .context import ClientFacts
from .context import Context
from .context import announce_client_request
from .context import check_capabilities
from .context import checked_answers
from .context import valid_answer

if t.TYPE_CHECKING:
    from ..runtime.state import AppState


MODES = ("forbidden", "optional", "required")
#: Log messages a 2025-11-25 task's record keeps for ``tasks/result`` (the oldest go first).
MAX_LOGS = 100
#: Seconds between two looks at the store while a handler waits for answers.
POLL = 0.1


@dataclasses.dataclass
class TaskCall(Call):
    """The ``tools/call`` a task runs: it is dispatched as a plain call."""

    task_id: str = ""
    task_flavour: str = V2026


#: The run of a task: called with the task's call, it runs the tool and returns its
#: result (the validated tool call goes on from where the request left it).
TaskBody = t.Callable[[Call], dict[str, t.Any]]


#: The error of a ``tools/call`` that would start more tasks than ``MCP_TASK_MAX_RUNNING``.
BUSY = "Too many tasks are running in this worker (MCP_TASK_MAX_RUNNING); retry later."
#: The error of a ``tools/call`` whose client runs its share of them already.
BUSY_CLIENT = (
    "This client runs its share of this worker's tasks (MCP_TASK_SHARE_PER_CLIENT); "
    "retry once one of them ended."
)


class Executor(t.Protocol):
    """Runs the handler of a task somewhere and records its outcome in the store."""

    def start(
        self, dispatcher: t.Any, call: Call, record: dict[str, t.Any], body: TaskBody
    ) -> None: ...

    def refusal(self, call: Call) -> str | None:
        """Tell why a task of ``call`` may not start now (``None``: it may)."""


def owner_of(call: Call) -> str:
    """Return who a task belongs to: the principal, and the session in the handshake era."""
    principal = None if call.auth is None else call.auth.principal
    return owner_key(principal, call.session.id if call.session is not None else None)


def caller_of(call: Call) -> str:
    """Return whom a task of ``call`` counts against for ``MCP_TASK_MAX_PER_CLIENT`` and
    ``MCP_TASK_MAX_BYTES_PER_CLIENT``: the principal, else the client's address.

    The address is ``REMOTE_ADDR`` (which ``ProxyFix`` sets), an IPv6 one standing
    for its /64, as for ``MCP_MAX_SESSIONS_PER_CLIENT``: anonymous callers share one
    owner (who may read a task) but not one quota. Off HTTP (stdio) it is the one
    local client.
    """
    principal = None if call.auth is None else call.auth.principal
    if principal is not None:
        who = f"principal:{principal}"
    else:
        who = f"addr:{client_network(call.client_address)}"
    return hashlib.sha256(who.encode()).hexdigest()[:32]


def opted_in(call: Call) -> bool:
    """Tell whether a 2026-07-28 request declares the tasks extension in its ``_meta``."""
    meta = call.params.get("_meta")
    caps = meta.get(protocol.META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


# -- inside the task: the Context ------------------------------------------------------


class TaskBackChannel:
    """Asks the client through the task record: ``input_required`` until answered.

    The answers are kept by the handler's key (its ``key=``, else ``elicitation-1``,
    ``sampling-2``... in call order, as a 2026-07-28 call numbers them): when the handler
    runs again (:meth:`run_again`, after a ``URLElicitationRequired``), a question it asks
    again under the key of an earlier run gets that run's answer, as a plain call's retry
    replays the answers of its earlier rounds from ``requestState``. Within one run each
    question is asked (a key of the task's ``inputRequests`` is never reused).
    """

    def __init__(self, state: AppState, task_id: str, flavour: str) -> None:
        self.state = state
        self.task_id = task_id
        self.flavour = flavour
        #: The answers of the handler's earlier runs by its key, replayed in this run.
        self.answered: dict[str, dict[str, t.Any]] = {}
        self._this_run: dict[str, dict[str, t.Any]] = {}
        self._auto = 0

    def _whose(self) -> str:
        """Name the task in the log lines of a dropped report: once per task, not per run."""
        return f"task {self.task_id}"

    def run_again(self, answers: dict[str, dict[str, t.Any]]) -> None:
        """Get ready for the handler's next run: it replays this run's answers and
        ``answers`` (by key), and numbers its questions from 1 again."""
        self.answered.update(self._this_run)
        self.answered.update(answers)
        self._this_run.clear()
        self._auto = 0

    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]:
        replay_key = key
        if replay_key is None:
            self._auto += 1
            replay_key = f"{method.partition('/')[0]}-{self._auto}"
        wanted = key or ""
        return self._replaying(ctx, {wanted: (method, params)}, {wanted: replay_key})[wanted]

    def request_many(
        self, ctx: Context, requests: dict[str, tuple[str, dict[str, t.Any]]]
    ) -> dict[str, dict[str, t.Any]]:
        return self._replaying(ctx, requests, {key: key for key in requests})

    def _replaying(
        self,
        ctx: Context,
        requests: dict[str, tuple[str, dict[str, t.Any]]],
        replay_keys: dict[str, str],
    ) -> dict[str, dict[str, t.Any]]:
        """Answer from :attr:`answered` what it holds; ask the client for the rest."""
        answers: dict[str, dict[str, t.Any]] = {}
        for wanted, (method, _) in requests.items():
            earlier = self.answered.get(replay_keys[wanted])
            if earlier is not None and valid_answer(method, earlier):
                answers[wanted] = earlier
        missing = {k: request for k, request in requests.items() if k not in answers}
        if missing:
            for wanted, answer in self.ask(ctx, missing).items():
                answers[wanted] = self._this_run[replay_keys[wanted]] = answer
        return {wanted: answers[wanted] for wanted in requests}

    def ask(
        self, ctx: Context, requests: dict[str, tuple[str, dict[str, t.Any]]]
    ) -> dict[str, dict[str, t.Any]]:
        """Put ``requests`` in the task's ``inputRequests`` and wait for all the answers."""
        if self.flavour == V2026:
            for method, _ in requests.values():
                if method not in ASKABLE_METHODS:
                    raise ClientRequestError(
                        f"Cannot send {method} to the client: a 2026-07-28 task only asks for "
                        "elicitation/create, sampling/createMessage and roots/list, in its "
                        "inputRequests."
                    )
        store = store_of(self.state)
        keys: dict[str, str] = {}  # the caller's key -> the task's key (unique per task)
        announced = self._announce(ctx, requests)

        def ask(record: dict[str, t.Any]) -> bool:
            keys.clear()
            if record["status"] in TERMINAL:
                return False
            pending = record.setdefault("inputRequests", {})
            for wanted, (method, params) in requests.items():
                record["seq"] = record.get("seq", 0) + 1
                key = _key(wanted, method, record["seq"])
                if wanted in announced:  # as the receivers of client_request_sending left it
                    params = announced[wanted][1]
                if self.flavour == V2025:
                    meta = {**params.get("_meta", {}), RELATED_TASK: {"taskId": self.task_id}}
                    params = {**params, "_meta": meta}
                elif not protocol.uses_elicitation_ids(ctx.protocol_version):
                    # 2026-07-28 has no elicitationId: left out, as in a call's inputRequests
                    params = {k: v for k, v in params.items() if k != "elicitationId"}
                pending[key] = {"method": method, "params": params}
                keys[wanted] = key
            touch(record, "input_required")
            return True

        record = store.mutate(self.task_id, ask)
        if record is None or not keys:
            raise RequestCancelled()
        # The ids the requests were announced under (their keys, but for questions asked
        # at the same time from another thread of the handler, which took the keys first).
        ids = {
            wanted: announced[wanted][0] if wanted in announced else key
            for wanted, key in keys.items()
        }
        for wanted, (method, _) in requests.items():
            signals.send(
                signals.client_request_sent,
                ctx.app,
                method=method,
                request_id=ids[wanted],
                session_id=ctx.session_id,
            )
        status_changed(self.state, record)
        wanted_keys = set(keys.values())
        taken: dict[str, t.Any] = {}
        refused: dict[str, t.Any] = {}

        def take(record: dict[str, t.Any]) -> bool:
            taken.clear()
            refused.clear()
            answers = record.get("responses") or {}
            errors = record.get("inputErrors") or {}
            if record["status"] in TERMINAL or not wanted_keys <= set(answers) | set(errors):
                return False
            for key in wanted_keys:
                if key in answers:
                    taken[key] = answers.pop(key)
                else:
                    taken[key] = refused[key] = errors.pop(key)
            if not record.get("inputRequests") and record["status"] == "input_required":
                touch(record, "working")
            return True

        while True:
            if ctx.cancelled:
                raise RequestCancelled()
            record = store.mutate(self.task_id, take)
            if record is None or record["status"] in TERMINAL:
                raise RequestCancelled()
            if taken:
                for wanted, key in keys.items():
                    signals.send(
                        signals.client_response_received,
                        ctx.app,
                        request_id=ids[wanted],
                        session_id=ctx.session_id,
                        error=_error_of(refused[key]) if key in refused else None,
                    )
                if record["status"] == "working":
                    status_changed(self.state, record)
                for error in refused.values():  # as a plain call's handler gets it
                    raise ClientRequestError(error["message"], error["error"])
                return {wanted: taken[key] for wanted, key in keys.items()}
            _concurrency.sleep(POLL)

    def _announce(
        self, ctx: Context, requests: dict[str, tuple[str, dict[str, t.Any]]]
    ) -> dict[str, tuple[str, dict[str, t.Any]]]:
        """Send ``client_request_sending`` for each of ``requests``, under the key it will
        have in the task's ``inputRequests``, before it is stored (a receiver may add to
        its params: a tracer's ``traceparent`` in ``_meta``, which the client gets).

        :returns: the caller's key -> the announced id and the params to store; empty when
            nothing receives the signal (the record is not read then).
        """
        if not signals.client_request_sending.receivers:
            return {}
        record = store_of(self.state).get(self.task_id)
        if record is None:
            return {}  # gone: the mutation that stores the requests finds it so too
        seq = record.get("seq", 0)
        announced = {}
        for n, (wanted, (method, params)) in enumerate(requests.items(), 1):
            request_id = _key(wanted, method, seq + n)
            params = announce_client_request(ctx.app, method, request_id, ctx.session_id, params)
            announced[wanted] = (request_id, params)
        return announced


def _key(wanted: str, method: str, seq: int) -> str:
    """The key of a task's ``inputRequests`` entry: the caller's key (else the method's
    prefix) and the task's sequence number, unique within the task."""
    return f"{wanted or method.split('/')[0]}-{seq}"


def _error_of(refusal: dict[str, t.Any]) -> dict[str, t.Any]:
    """The JSON-RPC error dict of an answer the client refused (:func:`refuse_inputs`)."""
    error = refusal.get("error")
    return error if isinstance(error, dict) else {"message": refusal.get("message", "")}


def answer_inputs(
    state: AppState, task_id: str, responses: dict[str, t.Any]
) -> dict[str, t.Any] | None:
    """Record the client's answers to outstanding ``inputRequests``; ignore other keys.

    :raises InvalidParams: an answer does not have the shape its request needs.
    """
    record = store_of(state).get(task_id)
    if record is None:
        return None
    outstanding = record.get("inputRequests") or {}
    for key, answer in responses.items():
        request = outstanding.get(key)
        if isinstance(request, dict) and not valid_answer(request["method"], answer):
            raise InvalidParams(
                f"Invalid params: inputResponses[{key!r}] must be "
                f"{EXPECTED_ANSWERS[request['method']]} answering {request['method']}."
            )

    return _settle_inputs(state, task_id, "responses", responses)


def refuse_inputs(
    state: AppState, task_id: str, errors: dict[str, ClientRequestError]
) -> dict[str, t.Any] | None:
    """Record that the client answered outstanding ``inputRequests`` with a JSON-RPC error.

    2025-11-25: ``tasks/result`` sends the task's requests to the client, which may
    answer one with an error (a user rejecting a sampling request gets ``-1``). The
    handler's request raises the same :exc:`~flask_mcp.ClientRequestError` a plain
    call's would, and the handler decides what the task answers.
    """

    refused = {key: {"message": str(exc), "error": exc.error} for key, exc in errors.items()}
    return _settle_inputs(state, task_id, "inputErrors", refused)


def _settle_inputs(
    state: AppState, task_id: str, field: str, outcomes: dict[str, t.Any]
) -> dict[str, t.Any] | None:
    """Move the outstanding ``inputRequests`` that ``outcomes`` names into ``field`` of
    the record (``responses``, or ``inputErrors``); return the record, or ``None`` if
    nothing changed (none outstanding, or the task ended)."""

    def change(record: dict[str, t.Any]) -> bool:
        pending = record.get("inputRequests") or {}
        used = [key for key in outcomes if key in pending]
        if not used or record["status"] in TERMINAL:
            return False
        settled = record.setdefault(field, {})
        for key in used:
            settled[key] = outcomes[key]
            del pending[key]
        touch(record)
        return True

    return store_of(state).mutate(task_id, change)


class TaskContext(Context):
    """The ``Context`` of a handler running as a task.

    ``progress()`` sets the task's ``statusMessage`` (a value not above the last one
    is skipped, as in any call); the log messages of a 2025-11-25 task wait in its
    record for the ``tasks/result`` that sends them, those of a 2026-07-28 task are
    dropped (SEP-2663 has no log messages on tasks); requests to the client go through
    the task record (``input_required``).
    Built by the kernel's one factory (:func:`flask_mcp.kernel.intake.task_context`).
    """

    def __init__(
        self,
        *,
        state: AppState,
        back_channel: TaskBackChannel,
        session_id: str | None = None,
        **kwargs: t.Any,
    ) -> None:
        super().__init__(back_channel=back_channel, **kwargs)
        self._state = state
        self._session_id = session_id
        #: The id of the task this handler runs for.
        self.task_id = back_channel.task_id

    @property
    def session_id(self) -> str | None:
        """The id of the session that created the task (2025-11-25), else ``None``.

        The task's run itself belongs to no session's stream, but the handler sees the
        session it serves, as in a plain call.
        """
        return self._session_id

    def _report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Set the task's ``statusMessage`` (``message``, or ``"progress/total"``).

        In a 2025-11-25 task whose request carried a ``progressToken``, the record keeps
        the ``notifications/progress`` too: a ``tasks/result`` waiting for the task sends
        it to the client (the spec: the token stays valid until the task ends). While the
        backend is unreachable the report is skipped (one warning per task, the next ones
        at ``DEBUG``, as in a call), and the task runs on.
        """
        text = message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}")
        notification = None
        if t.cast(TaskBackChannel, self._back_channel).flavour == V2025:
            notification = self._progress_params(progress, total, message)
        if notification is not None:
            notification["_meta"] = {RELATED_TASK: {"taskId": self.task_id}}

        def change(record: dict[str, t.Any]) -> bool:
            if record["status"] in TERMINAL:
                return False
            record["statusMessage"] = text
            if notification is not None:
                record["progress"] = notification
            touch(record)
            return True

        try:
            with best_effort():
                record = store_of(self._state).mutate(self.task_id, change)
            if record is not None:
                status_changed(self._state, record)
        except TaskQuotaExceeded:  # advisory: past the caller's bytes, skipped as a log is
            pass
        except BackendUnavailable as exc:
            # A status message is advisory (the next one replaces it): a task outlives a
            # Redis restart or failover rather than failing for one it could not write.
            self._dropped("a progress report", exc)

    def run_again(self, answers: dict[str, dict[str, t.Any]]) -> None:
        """Get ready for the handler's next run, after a ``URLElicitationRequired`` whose
        elicitations the client answered with ``answers``.

        The run starts as the plain call's retry does: the questions of the earlier runs
        are answered from them (:class:`TaskBackChannel`), ``answers`` are in
        :attr:`input_responses`, and progress is reported from the start (a new request's
        ``ctx.progress(1)`` is not "below the last value").
        """
        t.cast(TaskBackChannel, self._back_channel).run_again(answers)
        self.input_responses = answers
        self._last_progress = None
        self._progress_warned = False

    def ask_anew(
        self, requests: t.Mapping[str, tuple[str, dict[str, t.Any]]]
    ) -> dict[str, dict[str, t.Any]]:
        """Ask ``requests`` whatever earlier runs answered under the same keys: the URL
        elicitations of a ``URLElicitationRequired``, asked on each run as the plain
        call's ``InputRequiredResult`` asks them."""
        return t.cast(TaskBackChannel, self._back_channel).ask(self, dict(requests))

    def log(self, level: str, data: t.Any, logger: str | None = None) -> None:
        """Keep a log message of a 2025-11-25 task for ``tasks/result`` to send.

        It is filtered by the level the session asked for when the task was created, as
        a call's messages are, and carries the related task. The record keeps the last
        :data:`MAX_LOGS` not sent yet; one that would pass the caller's
        ``MCP_TASK_MAX_BYTES_PER_CLIENT`` is dropped, and so is one the backend cannot
        take (Redis down or failing over). A 2026-07-28 task drops them all:
        the tasks extension has no log messages.
        """
        params = self._log_params(level, data, logger)
        if params is None or t.cast(TaskBackChannel, self._back_channel).flavour != V2025:
            return
        params["_meta"] = {RELATED_TASK: {"taskId": self.task_id}}

        def change(record: dict[str, t.Any]) -> bool:
            if record["status"] in TERMINAL:
                return False
            kept = record.setdefault("logs", [])
            kept.append(params)
            del kept[:-MAX_LOGS]
            return True

        try:
            with best_effort():
                store_of(self._state).mutate(self.task_id, change)
        except TaskQuotaExceeded:  # not worth failing the task for
            pass
        except BackendUnavailable as exc:  # advisory, as a progress report is
            self._dropped("a log message", exc)

    def ask(
        self, requests: t.Mapping[str, tuple[str, dict[str, t.Any]]]
    ) -> dict[str, dict[str, t.Any]]:
        """Ask several questions at once: they are outstanding together."""
        for method, params in requests.values():
            check_capabilities(self, method, params)
        channel = t.cast(TaskBackChannel, self._back_channel)
        return checked_answers(requests, channel.request_many(self, dict(requests)))


def take_logs(state: AppState, task_id: str) -> list[dict[str, t.Any]]:
    """Remove the log messages a 2025-11-25 task's record keeps and return them, oldest
    first: the params of the ``notifications/message`` that ``tasks/result`` sends."""
    taken: list[dict[str, t.Any]] = []

    def change(record: dict[str, t.Any]) -> bool:
        taken[:] = record.pop("logs", None) or []
        return bool(taken)

    store_of(state).mutate(task_id, change)
    return taken


def auth_grant(auth: AuthInfo | None) -> dict[str, t.Any] | None:
    """Return what a task's record keeps of the caller's authorization (never the token).

    It is the server-side grant a task runs under wherever it runs (a Celery worker
    rebuilds the caller's :class:`~flask_mcp.AuthInfo` from it): the principal, the
    scopes, the client id and the claims (left out when they are not JSON).
    """
    if auth is None:
        return None
    try:
        claims = json.loads(json.dumps(auth.claims))
    except (TypeError, ValueError):
        claims = {}
    return {
        "principal": auth.principal,
        "scopes": sorted(auth.scopes),
        "claims": claims,
        "clientId": auth.client_id,
    }


def auth_of(record: dict[str, t.Any]) -> AuthInfo | None:
    """Rebuild the caller's authorization from the grant a task's record keeps."""
    grant = record.get("request", {}).get("auth")
    if not isinstance(grant, dict):
        return None
    return AuthInfo(
        principal=grant["principal"],
        scopes=frozenset(grant.get("scopes") or ()),
        claims=grant.get("claims") or {},
        client_id=grant.get("clientId"),
    )


def task_call(state: AppState, record: dict[str, t.Any], auth: t.Any = None) -> TaskCall:
    """Rebuild the ``tools/call`` a task runs from its record.

    Its facts are those the record kept of the request that created the task (the task
    may run in another worker, or in a Celery worker, long after the request), its
    ``_meta`` and the session's log level included (a 2025-11-25 task's messages go to
    ``tasks/result``).

    :param auth: the caller's authorization; default: rebuilt from the record's grant.
    """
    if auth is None:
        auth = auth_of(record)
    request = record["request"]
    params = {"name": request["name"], "arguments": request.get("arguments") or {}}
    if request.get("meta"):
        params["_meta"] = request["meta"]
    return TaskCall(
        "tools/call",
        params,
        f"task-{record['taskId']}",
        request["version"],
        request["era"],
        None,
        state=state,
        auth=auth,
        task_id=record["taskId"],
        task_flavour=record["flavour"],
        path_args=request.get("pathArgs") or {},
        facts=ClientFacts(
            request["version"],
            request.get("capabilities") or {},
            request.get("clientInfo") or {},
            request.get("logLevel"),
        ),
    )


__all__ = [
    "Executor",
    "auth_grant",
    "auth_of",
    "TaskBody",
    "TaskBackChannel",
    "TaskCall",
    "TaskContext",
    "answer_inputs",
    "opted_in",
    "owner_of",
    "refuse_inputs",
    "take_logs",
    "task_call",
]
