"""Multi round-trip requests: ctx.elicit/create_message/list_roots/ask on 2026-07-28."""

from __future__ import annotations

import logging
import time
import typing as t

import pytest
from flask import Flask
from wire import Wire
from wire import make_app

from flask_mcp import MCP
from flask_mcp import CapabilityNotDeclared
from flask_mcp import Context
from flask_mcp import URLElicitationRequired
from flask_mcp.server import mrtr
from flask_mcp.server.elicitation import ElicitationSchemaError
from flask_mcp.server.sealing import StateSealer
from flask_mcp.testing import MCPTestClient

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
HI = [{"role": "user", "content": {"type": "text", "text": "hi"}}]
ACCEPT = {"action": "accept", "content": {"name": "Ada"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
ROOTS = {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}
RUNS: list[str] = []


@pytest.fixture
def server() -> MCP:
    mcp = MCP(name="mrtr", version="1.0.0")
    RUNS.clear()

    @mcp.tool()
    def greet(ctx: Context) -> str:
        """Elicit a name, then sample: two rounds on 2026-07-28."""
        RUNS.append("greet")
        name = ctx.elicit("Name?", NAME)["content"]["name"]
        reply = ctx.create_message(HI, max_tokens=10)
        return f"{name}:{reply['content']['text']}"

    @mcp.tool()
    def everything(ctx: Context) -> str:
        """Ask three questions in one round."""
        ctx.request_state["asked_at"] = ctx.request_state.get("asked_at", "first-round")
        answers = ctx.ask({
            "who": mrtr.elicitation("Name?", NAME),
            "llm": mrtr.sampling(HI, 10, systemPrompt="Be brief."),
            "where": mrtr.roots(),
        })  # fmt: skip
        name, model = answers["who"]["content"]["name"], answers["llm"]["model"]
        roots = len(answers["where"]["roots"])
        return f"{name}|{model}|{roots}|{ctx.request_state['asked_at']}"

    @mcp.tool()
    def counter(ctx: Context) -> str:
        """Keep a counter in request_state across rounds."""
        ctx.request_state["n"] = ctx.request_state.get("n", 0) + 1
        first = ctx.elicit("One?", NAME, key="one")
        second = ctx.elicit("Two?", NAME, key="two")
        return (
            f"{first['content']['name']}+{second['content']['name']} after {ctx.request_state['n']}"
        )

    @mcp.tool()
    def visit(ctx: Context) -> str:
        """URL-mode elicitation."""
        return str(ctx.elicit_url("Sign in", "https://example.com/login", "e-1")["action"])

    @mcp.tool()
    def fallback(ctx: Context) -> str:
        """Ask only when the client can answer."""
        try:
            return str(ctx.list_roots())
        except CapabilityNotDeclared:
            return "no roots"

    @mcp.resource("test://secret")
    def secret(ctx: Context) -> str:
        """A resource that needs a confirmation."""
        answer = ctx.elicit("Really read it?", {"type": "object", "properties": {}})
        return "secret" if answer["action"] == "accept" else "refused"

    @mcp.prompt()
    def briefing(ctx: Context) -> str:
        """A prompt that asks for context."""
        return f"Context: {ctx.elicit('Context?', NAME, key='ctx')['content']['name']}"

    @mcp.prompt()
    def other(ctx: Context) -> str:
        """Another prompt."""
        return "other"

    @mcp.completion("prompt", "briefing")
    def complete(
        argument: str, value: str, context_arguments: dict[str, str], ctx: Context
    ) -> list[str]:
        ctx.elicit("Never asked", NAME)
        return []

    return mcp


@pytest.fixture
def app(server: MCP) -> Flask:
    return make_app(server)


@pytest.fixture
def wire(app: Flask) -> Wire:
    return Wire(app)


def call(wire: Wire, name: str, caps: dict[str, t.Any] | None = None, **params: t.Any) -> t.Any:
    """Call a tool; return ``(HTTP status, response message)``."""
    status, message, _ = wire.call(
        "tools/call", {"name": name, "arguments": {}, **params}, caps=caps
    )
    return status, message


def test_two_rounds(wire: Wire) -> None:
    _, first = call(wire, "greet")
    result = first["result"]
    assert result["resultType"] == "input_required"
    assert "ttlMs" not in result and isinstance(result["requestState"], str)
    assert result["inputRequests"] == {
        "elicitation-1": {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Name?", "requestedSchema": NAME},
        }
    }
    _, second = call(
        wire, "greet", inputResponses={"elicitation-1": ACCEPT}, requestState=result["requestState"]
    )
    result2 = second["result"]
    assert result2["inputRequests"] == {
        "sampling-2": {
            "method": "sampling/createMessage",
            "params": {"messages": HI, "maxTokens": 10},
        }
    }
    assert result2["requestState"] != result["requestState"]
    _, third = call(
        wire, "greet", inputResponses={"sampling-2": SAMPLED}, requestState=result2["requestState"]
    )
    assert third["result"]["content"][0]["text"] == "Ada:Paris"
    assert third["result"]["resultType"] == "complete"
    assert RUNS == ["greet"] * 3  # replayed from the first line each round


def test_answers_in_one_retry_need_no_state(wire: Wire) -> None:
    responses = {"elicitation-1": ACCEPT, "sampling-2": SAMPLED, "extra": {"x": 1}}
    _, message = call(wire, "greet", inputResponses=responses)
    assert message["result"]["content"][0]["text"] == "Ada:Paris"


def test_missing_answer_is_asked_again(wire: Wire) -> None:
    _, message = call(wire, "greet", inputResponses={"wrong_key": ACCEPT})
    assert list(message["result"]["inputRequests"]) == ["elicitation-1"]


@pytest.mark.parametrize(
    ("params", "text"),
    [
        ({"inputResponses": None}, "inputResponses must be an object"),
        ({"inputResponses": {"elicitation-1": 12345}}, "must be an ElicitResult"),
        ({"inputResponses": {"elicitation-1": {"action": "maybe"}}}, "must be an ElicitResult"),
        ({"requestState": 7}, "requestState must be the string"),
        ({"requestState": "v1.garbage"}, "requestState integrity check failed"),
    ],
)
def test_malformed_input(wire: Wire, params: dict[str, t.Any], text: str) -> None:
    status, message = call(wire, "greet", **params)
    assert (
        status == 200 and message["error"]["code"] == -32602 and text in message["error"]["message"]
    )


def test_ask_many_at_once_with_state(wire: Wire) -> None:
    _, first = call(wire, "everything")
    requests = first["result"]["inputRequests"]
    assert [r["method"] for r in requests.values()] == [
        "elicitation/create", "sampling/createMessage", "roots/list"
    ]  # fmt: skip
    assert requests["llm"]["params"]["systemPrompt"] == "Be brief."
    answers = {"who": ACCEPT, "llm": SAMPLED, "where": ROOTS}
    _, done = call(
        wire, "everything", inputResponses=answers, requestState=first["result"]["requestState"]
    )
    assert done["result"]["content"][0]["text"] == "Ada|m|2|first-round"


def test_ask_checks_every_capability(wire: Wire) -> None:
    status, message = call(wire, "everything", caps={"sampling": {}, "elicitation": {}})
    assert status == 400 and message["error"]["code"] == -32021
    assert message["error"]["data"] == {"requiredCapabilities": {"roots": {}}}


def test_earlier_answers_travel_in_the_state(wire: Wire) -> None:
    _, r1 = call(wire, "counter")
    _, r2 = call(
        wire, "counter", inputResponses={"one": ACCEPT}, requestState=r1["result"]["requestState"]
    )
    assert list(r2["result"]["inputRequests"]) == ["two"]
    bob = {"action": "accept", "content": {"name": "Bob"}}
    _, r3 = call(
        wire, "counter", inputResponses={"two": bob}, requestState=r2["result"]["requestState"]
    )
    assert r3["result"]["content"][0]["text"] == "Ada+Bob after 3"


def test_tampered_expired_and_misbound_state(app: Flask, wire: Wire) -> None:
    _, r1 = call(wire, "counter")
    token = r1["result"]["requestState"]
    _, message = call(
        wire, "counter", inputResponses={"one": ACCEPT}, requestState=token + "-TAMPERED"
    )
    assert message["error"]["code"] == -32602
    assert message["error"]["message"].startswith("requestState integrity check failed")
    _, message = call(wire, "greet", inputResponses={"one": ACCEPT}, requestState=token)
    assert "integrity check failed" in message["error"]["message"]  # bound to the tool
    status, message, _ = wire.call(
        "tools/call", {"name": "counter", "arguments": {"x": 1}, "requestState": token}
    )
    assert "integrity check failed" in message["error"]["message"]  # and to its arguments
    old = StateSealer("test-secret", max_age=600, clock=lambda: time.time() - 3600)
    payload = {"a": {}, "s": {}, "r": 1}
    params = {"name": "counter", "arguments": {}}
    expired = old.seal(payload, bind=mrtr.binding("tools/call", params, None))
    _, message = call(wire, "counter", requestState=expired)
    assert "expired" in message["error"]["message"]


def test_state_key_is_shared_by_workers(server: MCP) -> None:
    first = Wire(make_app(server, SECRET_KEY="one", MCP_STATE_KEY="shared"))
    _, r1 = call(first, "counter")
    token = r1["result"]["requestState"]
    second = Wire(make_app(server, SECRET_KEY="two", MCP_STATE_KEY="shared"))
    _, r2 = call(second, "counter", inputResponses={"one": ACCEPT}, requestState=token)
    assert list(r2["result"]["inputRequests"]) == ["two"]
    third = Wire(make_app(server, SECRET_KEY="two"))
    _, r3 = call(third, "counter", inputResponses={"one": ACCEPT}, requestState=token)
    assert "integrity check failed" in r3["error"]["message"]


def test_secret_key_rotation(server: MCP) -> None:
    old = Wire(make_app(server, SECRET_KEY="old"))
    token = call(old, "counter")[1]["result"]["requestState"]
    new = Wire(make_app(server, SECRET_KEY="new", SECRET_KEY_FALLBACKS=["old"]))
    _, message = call(new, "counter", inputResponses={"one": ACCEPT}, requestState=token)
    assert message["result"]["resultType"] == "input_required"


def test_encrypted_state(server: MCP) -> None:
    pytest.importorskip("cryptography")
    wire = Wire(make_app(server, MCP_STATE_ENCRYPT=True))
    token = call(wire, "counter")[1]["result"]["requestState"]
    assert token.startswith("e1.")
    _, message = call(wire, "counter", inputResponses={"one": ACCEPT}, requestState=token)
    assert list(message["result"]["inputRequests"]) == ["two"]


def test_without_a_key_a_process_key_is_used(server: MCP, caplog: pytest.LogCaptureFixture) -> None:
    app = Flask("no_key")
    server.init_app(app)
    wire = Wire(app)
    with caplog.at_level(logging.WARNING, logger="flask_mcp"):
        token = call(wire, "counter")[1]["result"]["requestState"]
    assert "Neither MCP_STATE_KEY nor SECRET_KEY" in caplog.text
    assert call(wire, "counter", inputResponses={"one": ACCEPT}, requestState=token)[1]["result"]


def test_capabilities(wire: Wire) -> None:
    status, message = call(wire, "greet", caps={"sampling": {}})
    assert status == 400 and message["error"]["data"] == {
        "requiredCapabilities": {"elicitation": {}}
    }
    status, message = call(wire, "visit", caps={"elicitation": {}})
    assert message["error"]["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}
    _, message = call(wire, "visit", caps={"elicitation": {"url": {}}})
    (request,) = message["result"]["inputRequests"].values()
    assert request["params"] == {
        "mode": "url",
        "message": "Sign in",
        "url": "https://example.com/login",
    }
    _, message = call(wire, "fallback", caps={})
    assert message["result"]["content"][0]["text"] == "no roots"  # a handler may catch it


def test_prompts_and_resources(wire: Wire) -> None:
    _, message, _ = wire.call("prompts/get", {"name": "briefing"})
    assert list(message["result"]["inputRequests"]) == ["ctx"]
    token = message["result"]["requestState"]
    _, message, _ = wire.call(
        "prompts/get",
        {"name": "briefing", "inputResponses": {"ctx": ACCEPT}, "requestState": token},
    )
    assert message["result"]["messages"][0]["content"]["text"] == "Context: Ada"
    _, message, _ = wire.call("prompts/get", {"name": "other", "requestState": token})
    assert "integrity check failed" in message["error"]["message"]
    _, message, _ = wire.call("resources/read", {"uri": "test://secret"})
    assert message["result"]["resultType"] == "input_required" and "ttlMs" not in message["result"]
    answer = {"elicitation-1": {"action": "decline"}}
    _, message, _ = wire.call("resources/read", {"uri": "test://secret", "inputResponses": answer})
    assert message["result"]["contents"][0]["text"] == "refused"
    assert message["result"]["cacheScope"] == "private"


def test_other_methods_never_ask(wire: Wire) -> None:
    params = {
        "ref": {"type": "ref/prompt", "name": "briefing"},
        "argument": {"name": "a", "value": ""},
    }
    _, message, _ = wire.call("completion/complete", params)
    assert message["error"]["code"] == -32603
    _, message, _ = wire.call("tools/list", {"inputResponses": {"x": {}}, "requestState": "junk"})
    assert message["result"]["resultType"] == "complete"


def test_same_tools_on_a_session(server: MCP) -> None:
    with MCPTestClient(
        make_app(server),
        elicitation=lambda params: ACCEPT,
        sampling=lambda params: SAMPLED,
        roots=ROOTS["roots"],
    ) as client:
        assert client.call_tool("greet")["content"][0]["text"] == "Ada:Paris"
        assert client.call_tool("everything")["content"][0]["text"] == "Ada|m|2|first-round"
        assert client.call_tool("counter")["content"][0]["text"] == "Ada+Ada after 1"
    assert RUNS == ["greet"]


def test_send_request_checks_the_capability(server: MCP) -> None:
    @server.tool()
    def raw_roots(ctx: Context) -> str:
        """Ask for the roots through the generic send_request."""
        try:
            return str(ctx.send_request("roots/list", {})["roots"])
        except CapabilityNotDeclared:
            return "no roots"

    _, message = call(Wire(make_app(server)), "raw_roots", caps={"elicitation": {}})
    assert message["result"]["content"][0]["text"] == "no roots"  # no roots/list inputRequest
    with MCPTestClient(make_app(server), elicitation=lambda params: ACCEPT) as client:
        assert client.call_tool("raw_roots")["content"][0]["text"] == "no roots"


def test_only_elicitation_sampling_and_roots_are_asked(server: MCP) -> None:
    @server.tool()
    def ping_client(ctx: Context) -> str:
        """Send a request that has no place in an InputRequiredResult."""
        return str(ctx.send_request("ping", {}))

    wire = Wire(make_app(server))
    for params in ({}, {"inputResponses": {"input-1": {"unexpected": True}}}):
        _, message = call(wire, "ping_client", **params)
        result = message["result"]
        assert result["resultType"] == "complete" and result["isError"] is True
        assert "only asks for elicitation/create" in result["content"][0]["text"]


def test_ask_refuses_a_form_that_is_not_flat(server: MCP) -> None:
    nested = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}

    @server.tool()
    def ask_nested(ctx: Context) -> str:
        """Ask for a nested object, which an elicitation form cannot be."""
        try:
            ctx.ask({"address": mrtr.elicitation("Address?", nested)})
        except ElicitationSchemaError as exc:
            return str(exc)
        return "asked"

    _, message = call(Wire(make_app(server)), "ask_nested")
    assert "field 'address'" in message["result"]["content"][0]["text"]  # not in inputRequests
    with MCPTestClient(make_app(server), elicitation=lambda params: ACCEPT) as client:
        assert "MCP forms are flat" in client.call_tool("ask_nested")["content"][0]["text"]


@pytest.mark.parametrize("url", ["/login", "https://[example.com/login"])
def test_a_url_elicitation_needs_an_absolute_url(server: MCP, url: str) -> None:
    @server.tool()
    def relative(ctx: Context) -> str:
        """Send the user to a URL a client cannot open (relative, or not parseable)."""
        try:
            return str(ctx.elicit_url("Sign in", url, "e-2")["action"])
        except ValueError as exc:
            return str(exc)

    caps = {"elicitation": {"url": {}}}
    _, message = call(Wire(make_app(server)), "relative", caps=caps)
    assert "needs an absolute URL" in message["result"]["content"][0]["text"]
    with MCPTestClient(
        make_app(server), elicitation=lambda params: {"action": "accept"}, capabilities=caps
    ) as client:
        assert "needs an absolute URL" in client.call_tool("relative")["content"][0]["text"]


def test_url_elicitation_required_is_an_input_request_at_2026(server: MCP) -> None:
    login = {"mode": "url", "elicitationId": "e-9", "url": "https://example.com/login"}

    @server.tool()
    def needs_login() -> str:
        """Needs an out-of-band login first (-32042 in 2025-11-25)."""
        raise URLElicitationRequired([{**login, "message": "Log in"}])

    wire = Wire(make_app(server))
    status, message = call(wire, "needs_login", caps={"elicitation": {}})
    assert status == 400 and message["error"]["code"] == -32021
    _, message = call(wire, "needs_login", caps={"elicitation": {"url": {}}})
    result = message["result"]  # 2026-07-28 MUST NOT emit -32042
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        "e-9": {
            "method": "elicitation/create",
            "params": {"mode": "url", "url": "https://example.com/login", "message": "Log in"},
        }
    }
    with pytest.raises(ValueError, match="URL-mode elicitations only"):
        URLElicitationRequired([{"mode": "form", "message": "Log in"}])


def test_ask_validates_accepted_forms(server: MCP, wire: Wire) -> None:
    wrong = {"action": "accept", "content": {"name": 5}}
    answers = {"who": wrong, "llm": SAMPLED, "where": ROOTS}
    _, message = call(wire, "everything", inputResponses=answers)
    text = message["result"]["content"][0]["text"]
    assert message["result"]["isError"] and "does not fit the requested schema" in text
    with MCPTestClient(
        make_app(server),
        elicitation=lambda params: wrong,
        sampling=lambda params: SAMPLED,
        roots=ROOTS["roots"],
    ) as client:
        answered = client.call_tool("everything")
    assert answered["isError"] and "'name'" in answered["content"][0]["text"]
