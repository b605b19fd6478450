"""Multi round-trip requests (MRTR): the 2026-07-28 back-channel.

In the stateless revision a server never sends requests to the client.
When a handler calls ``ctx.elicit()``, ``ctx.create_message()``,
``ctx.list_roots()`` or ``ctx.ask()`` and the answer is not in the request,
the call ends with an ``InputRequiredResult``::

    {"resultType": "input_required",
     "inputRequests": {"elicitation-1": {"method": "elicitation/create", "params": {...}}},
     "requestState": "<sealed>"}

The client answers and retries the same request with ``inputResponses`` and
the ``requestState``; the handler then runs again **from its first line**, and
this time the call returns the answer. Answers of earlier rounds travel in the
sealed ``requestState``, together with :attr:`Context.request_state
<flask_mcp.Context.request_state>`, so any worker can serve any round.

The state is sealed with :class:`~flask_mcp.server.sealing.StateSealer`, keyed from
``MCP_STATE_KEY`` or the app's ``SECRET_KEY`` (plus ``SECRET_KEY_FALLBACKS``),
expires after ``MCP_STATE_MAX_AGE`` seconds and is bound to the caller, the
method, the tool/prompt/resource, the arguments and the values of ``MCP_PATH``'s
URL variables (the tenant of ``/t/<tenant>/mcp``).

Build several questions for :meth:`Context.ask <flask_mcp.Context.ask>` with
:func:`elicitation`, :func:`sampling` and :func:`roots`.
"""

from __future__ import annotations

import logging
import secrets
import typing as t

from .. import protocol
from ..errors import ClientRequestError
from ..errors import InvalidParams
from ..errors import MissingClientCapability as MissingClientCapability
from ..errors import URLElicitationRequired
from .call import client_facts
from .context import ASKABLE_METHODS
from .context import EXPECTED_ANSWERS
from .context import check_capabilities as check_capabilities
from .context import valid_answer
from .sealing import InvalidState
from .sealing import StateSealer
from .sealing import fingerprint
from .sealing import secret_keys

if t.TYPE_CHECKING:
    from ..auth import AuthInfo
    from ..runtime.state import AppState
    from .call import Call
    from .context import Context

logger = logging.getLogger("flask_mcp")

#: One question: ``(method, params)``.
InputRequest = tuple[str, dict[str, t.Any]]


class InputRequired(BaseException):  # noqa: N818 - it is a control-flow signal
    """Ends a 2026-07-28 handler because it needs answers from the client.

    It derives from :class:`BaseException` so that ``except Exception`` in
    handler code does not swallow it.

    :param requests: the ``inputRequests`` by key.
    """

    def __init__(self, requests: dict[str, dict[str, t.Any]]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests


# -- building questions --------------------------------------------------------


def elicitation(message: str, requested_schema: dict[str, t.Any]) -> InputRequest:
    """Return a form-mode ``elicitation/create`` request for :meth:`Context.ask`."""
    params = {"mode": "form", "message": message, "requestedSchema": requested_schema}
    return "elicitation/create", params


def sampling(messages: list[dict[str, t.Any]], max_tokens: int, **options: t.Any) -> InputRequest:
    """Return a ``sampling/createMessage`` request for :meth:`Context.ask`.

    ``options`` are further ``CreateMessageRequestParams`` fields by their
    wire names, e.g. ``systemPrompt="..."``.
    """
    return "sampling/createMessage", {"messages": messages, "maxTokens": max_tokens, **options}


def roots() -> InputRequest:
    """Return a ``roots/list`` request for :meth:`Context.ask`."""
    return "roots/list", {}


class MRTRBackChannel:
    """Answers ``ctx`` requests from ``inputResponses`` and the sealed state.

    :param method: the request's method; only ``tools/call``, ``prompts/get``
        and ``resources/read`` may ask.
    :param responses: the request's ``inputResponses``.
    :param answered: answers of earlier rounds, from ``requestState``.
    :param round_no: how many rounds came before this one.
    """

    def __init__(
        self,
        method: str,
        responses: dict[str, t.Any],
        answered: dict[str, t.Any],
        round_no: int = 0,
    ) -> None:
        self.method = method
        self.responses = responses
        self.answered = answered
        self.round_no = round_no
        self.used: dict[str, t.Any] = {}
        self._auto = 0

    def request(
        self, ctx: Context, method: str, params: dict[str, t.Any], key: str | None = None
    ) -> dict[str, t.Any]:
        if key is None:
            self._auto += 1
            key = f"{method.partition('/')[0]}-{self._auto}"
        return self.request_many(ctx, {key: (method, params)})[key]

    def request_many(
        self, ctx: Context, requests: dict[str, InputRequest]
    ) -> dict[str, dict[str, t.Any]]:
        if not protocol.allows_input_required(protocol.STATELESS, self.method):
            raise ClientRequestError(
                f"Cannot ask the client for input during {self.method}: in protocol "
                f"{ctx.protocol_version} only tools/call, prompts/get and resources/read may."
            )
        answers: dict[str, dict[str, t.Any]] = {}
        missing: dict[str, dict[str, t.Any]] = {}
        for key, (method, params) in requests.items():
            if method not in ASKABLE_METHODS:
                raise ClientRequestError(
                    f"Cannot send {method} to the client: in protocol {ctx.protocol_version} a "
                    "server only asks for elicitation/create, sampling/createMessage and "
                    "roots/list, inside an InputRequiredResult. Check ctx.call.era before "
                    "sending other requests."
                )
            if not protocol.uses_elicitation_ids(ctx.protocol_version):
                params = {k: v for k, v in params.items() if k != "elicitationId"}
            if key in self.responses:
                answer = self.responses[key]
                if not valid_answer(method, answer):
                    raise InvalidParams(
                        f"Invalid params: inputResponses[{key!r}] must be "
                        f"{EXPECTED_ANSWERS[method]} answering {method}."
                    )
            elif key in self.answered and valid_answer(method, self.answered[key]):
                answer = self.answered[key]
            else:
                missing[key] = {"method": method, "params": params}
                continue
            answers[key] = self.used[key] = answer
        if missing:
            raise InputRequired(missing)
        return answers

    def state_payload(self, request_state: dict[str, t.Any]) -> dict[str, t.Any]:
        """Return what the next ``requestState`` must carry."""
        return {"a": {**self.answered, **self.used}, "s": request_state, "r": self.round_no + 1}


# -- sealing -------------------------------------------------------------------------


def sealer_for(state: AppState) -> StateSealer:
    """Return the app's ``requestState`` sealer (``MCP_STATE_KEY`` or ``SECRET_KEY``).

    Made on the first multi-round request and kept on the app's state, so a
    ``SECRET_KEY`` set after ``init_app`` is used.
    """
    sealer: StateSealer | None = state.sealer
    if sealer is not None:
        return sealer
    settings = state.settings
    config = state.config
    keys: list[t.Any] = []
    if settings.state_key:
        keys.append(settings.state_key)
    else:
        keys.extend(secret_keys(config))
    if not keys:
        logger.warning(
            "Neither MCP_STATE_KEY nor SECRET_KEY is set: 2026-07-28 requestState is sealed "
            "with a random key of this process, so multi-round requests fail when a retry "
            "reaches another worker or the server restarts. Set MCP_STATE_KEY or SECRET_KEY."
        )
        keys.append(secrets.token_bytes(32))
    sealer = StateSealer(keys, max_age=settings.state_max_age, encrypt=settings.state_encrypt)
    state.sealer = sealer
    return sealer


def binding(
    method: str,
    params: dict[str, t.Any],
    auth: AuthInfo | None,
    path_args: t.Mapping[str, t.Any] | None = None,
) -> str:
    """Tie a ``requestState`` to the caller and to the request that produced it.

    :param path_args: the values of ``MCP_PATH``'s URL variables (the tenant of
        ``/t/<tenant>/mcp``): state from one endpoint is refused at another.
    """
    target = params.get("uri") if method == "resources/read" else params.get("name")
    principal = None if auth is None else auth.principal
    parts: tuple[t.Any, ...] = (principal, method, target, params.get("arguments") or {})
    if path_args:
        parts += ({name: str(value) for name, value in path_args.items()},)
    return fingerprint(*parts)


def open_round(
    state: AppState,
    method: str,
    params: dict[str, t.Any],
    auth: AuthInfo | None,
    path_args: t.Mapping[str, t.Any] | None = None,
) -> tuple[MRTRBackChannel, dict[str, t.Any]]:
    """Read ``inputResponses`` and ``requestState``; return the back-channel and the state data.

    :param path_args: the values of ``MCP_PATH``'s URL variables, which the state is bound to.

    :raises InvalidParams: either is malformed, or the state fails verification.
    """
    if not protocol.allows_input_required(protocol.STATELESS, method):
        return MRTRBackChannel(method, {}, {}), {}  # other methods ignore both params
    responses = params.get("inputResponses", {})
    if not isinstance(responses, dict):
        raise InvalidParams(
            "Invalid params: inputResponses must be an object mapping keys to results."
        )
    token = params.get("requestState")
    if token is None:
        return MRTRBackChannel(method, responses, {}), {}
    if not isinstance(token, str):
        raise InvalidParams("Invalid params: requestState must be the string the server sent.")
    try:
        payload = sealer_for(state).unseal(token, bind=binding(method, params, auth, path_args))
    except InvalidState as exc:
        raise InvalidParams(f"requestState integrity check failed: {exc.reason}") from None
    if not (
        isinstance(payload, dict)
        and isinstance(payload.get("a"), dict)
        and isinstance(payload.get("s"), dict)
        and isinstance(payload.get("r"), int)
    ):
        raise InvalidParams("requestState integrity check failed: unexpected payload.")
    return MRTRBackChannel(method, responses, payload["a"], payload["r"]), payload["s"]


def url_elicitations(call: Call, exc: URLElicitationRequired) -> InputRequired:
    """Return the ``InputRequired`` a 2026-07-28 request answers a ``URLElicitationRequired`` with.

    2026-07-28 drops error ``-32042`` (``basic/index.mdx``: implementations MUST NOT emit
    it); its URL-mode elicitations become ``inputRequests`` keyed by ``elicitationId``,
    and the client retries once the user has been to the pages, as the MRTR URL-mode flow
    describes. The handler then runs again and decides whether the flow completed.

    :raises MissingClientCapability: the client did not declare ``elicitation.url``.
    """
    declared = client_facts(call).capabilities.get("elicitation")
    if not isinstance(declared, dict) or "url" not in declared:
        raise MissingClientCapability("elicitation", "url")
    requests: dict[str, dict[str, t.Any]] = {}
    for elicitation in exc.elicitations:
        params = {k: v for k, v in elicitation.items() if k != "elicitationId"}
        requests[elicitation["elicitationId"]] = {"method": "elicitation/create", "params": params}
    return InputRequired(requests)


def input_required_result(
    state: AppState,
    exc: InputRequired,
    channel: MRTRBackChannel,
    request_state: dict[str, t.Any],
    params: dict[str, t.Any],
    auth: AuthInfo | None,
    path_args: t.Mapping[str, t.Any] | None = None,
) -> dict[str, t.Any]:
    """Return the ``InputRequiredResult`` for ``exc`` with a freshly sealed ``requestState``."""
    payload = channel.state_payload(request_state)
    bind = binding(channel.method, params, auth, path_args)
    token = sealer_for(state).seal(payload, bind=bind)
    return {"resultType": "input_required", "inputRequests": exc.requests, "requestState": token}


__all__ = [
    "InputRequest",
    "InputRequired",
    "MRTRBackChannel",
    "binding",
    "elicitation",
    "input_required_result",
    "open_round",
    "roots",
    "sampling",
    "sealer_for",
    "url_elicitations",
]
