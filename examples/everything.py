"""Every fixture of the official MCP conformance server suites (handshake era).

This server implements the fixtures that ``@modelcontextprotocol/conformance``
(0.1.16, and the 0.2.0 alpha at ``--spec-version 2025-11-25``) expects from an
"everything" server: tools, resources, prompts and completions with exact names
and texts. Run it and point the suite at it::

    gunicorn -k gevent -b 127.0.0.1:18080 examples.everything:app
    tests/conformance/run http://127.0.0.1:18080/mcp --suite all

Configuration comes from ``FLASK_*`` environment variables (for example
``FLASK_MCP_SSE_RETRY_MS=100`` or ``FLASK_SECRET_KEY=...``).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import stat
import tempfile
import time
import typing as t
from pathlib import Path

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import ToolError
from flask_mcp import content
from flask_mcp import mrtr

#: A 1x1 PNG image, base64.
IMG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
#: A tiny WAV file, base64.
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

mcp = MCP(
    name="flask-mcp-everything",
    version="1.0.0",
    title="Flask-MCP conformance server",
    description="Implements every fixture of the MCP conformance server suites.",
    instructions="A test server: each tool, resource and prompt is a conformance fixture.",
)

# ---------------------------------------------------------------------------
# Tools (handshake era, §2.1). test_simple_text must stay first.
# ---------------------------------------------------------------------------


@mcp.tool()
def test_simple_text() -> str:
    """Return a simple text response."""
    return "This is a simple text response for testing."


# Tools returning content blocks turn structured output off: a content block is
# a dict, which would otherwise be published as an output schema.
@mcp.tool(structured_output=False)
def test_image_content() -> content.Content:
    """Return an image content block (a 1x1 PNG)."""
    return content.image(IMG, "image/png")


@mcp.tool(structured_output=False)
def test_audio_content() -> content.Content:
    """Return an audio content block (a tiny WAV file)."""
    return content.audio(WAV, "audio/wav")


@mcp.tool(structured_output=False)
def test_embedded_resource() -> content.Content:
    """Return an embedded text resource."""
    return content.embedded(
        "test://embedded-resource",
        text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@mcp.tool(structured_output=False)
def test_multiple_content_types() -> list[content.Content]:
    """Return text, an image and an embedded resource together."""
    return [
        content.text("Multiple content types test:"),
        content.image(IMG, "image/png"),
        content.embedded(
            "test://mixed-content-resource",
            text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            mime_type="application/json",
        ),
    ]


@mcp.tool()
def test_tool_with_logging(ctx: Context) -> str:
    """Send three info log messages about 50 ms apart, then return text."""
    ctx.log("info", "Tool execution started")
    time.sleep(0.05)
    ctx.log("info", "Tool processing data")
    time.sleep(0.05)
    ctx.log("info", "Tool execution completed")
    return "Logging test completed"


@mcp.tool()
def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0/100, 50/100 and 100/100 about 50 ms apart, then return text."""
    ctx.progress(0, 100)
    time.sleep(0.05)
    ctx.progress(50, 100)
    time.sleep(0.05)
    ctx.progress(100, 100)
    return "Progress test completed"


@mcp.tool()
def test_error_handling() -> str:
    """Always fail with a tool error (a result with isError set)."""
    raise ToolError("This tool intentionally returns an error for testing")


@mcp.tool()
def test_sampling(prompt: str, ctx: Context) -> str:
    """Ask the client's language model to answer a prompt (sampling/createMessage).

    :param prompt: the text sent to the model.
    """
    result = ctx.create_message(
        [{"role": "user", "content": {"type": "text", "text": prompt}}],
        max_tokens=100,
    )
    reply = result.get("content")
    if isinstance(reply, list):  # sampling with tools may answer a list of blocks
        reply = reply[0] if reply else {}
    text = reply.get("text", "") if isinstance(reply, dict) else ""
    return f"LLM response: {text}"


def _describe(what: str, result: dict[str, t.Any]) -> str:
    """Describe an elicitation answer."""
    return f"{what}: action={result.get('action')}, content={json.dumps(result.get('content'))}"


@mcp.tool()
def test_elicitation(message: str, ctx: Context) -> str:
    """Ask the user for a username and an email (elicitation/create).

    :param message: the text shown to the user.
    """
    result = ctx.elicit(
        message,
        {
            "type": "object",
            "properties": {"username": {"type": "string"}, "email": {"type": "string"}},
            "required": ["username", "email"],
        },
    )
    return _describe("User response", result)


@mcp.tool()
def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicit with default values on every primitive type (SEP-1034)."""
    result = ctx.elicit(
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {
                    "type": "boolean",
                    "description": "Verification status",
                    "default": True,
                },
            },
            "required": [],
        },
    )
    return _describe("Elicitation completed", result)


@mcp.tool()
def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicit with every enum variant: untitled, titled, legacy, single, multi (SEP-1330)."""
    result = ctx.elicit(
        "Please select options from the enum fields",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return _describe("Elicitation completed", result)


#: The SEP-2106 / JSON Schema 2020-12 fixture, published byte-for-byte.
JSON_SCHEMA_2020_12: dict[str, t.Any] = json.loads(
    """{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
 "$defs":{"address":{"$anchor":"addressDef","type":"object",
   "properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
 "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},
   "contactMethod":{"type":"string","enum":["phone","email"]},
   "phone":{"type":"string"},"email":{"type":"string"}},
 "allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
 "if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},
 "then":{"required":["phone"]},"else":{"required":["email"]},
 "additionalProperties":false}"""
)


@mcp.tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(arguments: dict[str, t.Any]) -> str:
    """Accept arguments described by a JSON Schema 2020-12 document ($defs, $ref, if/then/else)."""
    return f"Received: {json.dumps(arguments, sort_keys=True)}"


@mcp.tool()
def test_reconnection(ctx: Context) -> str:
    """Close the SSE stream at once, then answer on the resumed stream (SSE polling)."""
    ctx.close_sse_stream()
    time.sleep(0.15)
    return "Reconnection test completed"


# ---------------------------------------------------------------------------
# 2026-07-28 leg (§4). They also work in the handshake era: there ctx.elicit(),
# ctx.create_message() and ctx.list_roots() are real requests to the client;
# on a 2026-07-28 request they end the call with an InputRequiredResult and
# the client's retry runs the tool again from its first line with the answers.
# ---------------------------------------------------------------------------


@mcp.tool()
def test_missing_capability(ctx: Context) -> str:
    """Succeed only if the client declared the sampling capability."""
    if "sampling" not in (ctx.client_capabilities or {}):
        raise MCPError(
            -32021,
            "This tool requires the client capability 'sampling'.",
            {"requiredCapabilities": {"sampling": {}}},
            http_status=400,
        )
    return "Success"


@mcp.tool()
def test_streaming_elicitation(ctx: Context) -> str:
    """Answer at once with text, after one progress notification if one was asked for."""
    ctx.progress(1, 1, "Streaming result")
    return "Streaming elicitation test completed"


@mcp.tool()
def test_logging_tool(ctx: Context) -> str:
    """Log one info message (if the client asked for logs), then answer at once."""
    ctx.log("info", "Logging tool called")
    return "Logging tool completed"


@mcp.tool()
def test_trigger_tool_change() -> str:
    """Tell every listener that the tool list changed (the list itself stays the same)."""
    mcp.notify_list_changed("tools")
    return "Tool list change notification sent"


@mcp.tool()
def test_trigger_prompt_change() -> str:
    """Tell every listener that the prompt list changed (the list itself stays the same)."""
    mcp.notify_list_changed("prompts")
    return "Prompt list change notification sent"


@mcp.tool(input_schema={
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    "required": ["region"],
})  # fmt: skip
def test_custom_header(arguments: dict[str, t.Any]) -> str:
    """SEP-2243 x-mcp-header fixture: the region travels in the Mcp-Param-Region header too."""
    return f"Region: {arguments['region']}"


NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CAPITAL = [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}]


def _text(result: dict[str, t.Any]) -> str:
    """The text of a sampling result."""
    reply = result.get("content")
    if isinstance(reply, list):
        reply = reply[0] if reply else {}
    return reply.get("text", "") if isinstance(reply, dict) else ""


@mcp.tool()
def test_input_required_result_elicitation(ctx: Context) -> str:
    """Ask for the user's name, then greet them."""
    answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {(answer.get('content') or {}).get('name', 'stranger')}!"


@mcp.tool()
def test_input_required_result_sampling(ctx: Context) -> str:
    """Ask the client's model for the capital of France."""
    return f"LLM response: {_text(ctx.create_message(CAPITAL, max_tokens=100))}"


@mcp.tool()
def test_input_required_result_list_roots(ctx: Context) -> str:
    """Ask the client for its roots and count them."""
    return f"Found {len(ctx.list_roots())} root(s)"


@mcp.tool()
def test_input_required_result_request_state(ctx: Context) -> str:
    """Keep server data in request_state across the round trip, then confirm it survived."""
    previous = ctx.request_state.get("token")  # what the first round stored (2026-07-28)
    ctx.request_state["token"] = "state-ok"
    answer = ctx.elicit(
        "Please confirm",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    survived = previous == "state-ok" or ctx.session_id is not None  # a session runs once
    confirmed = (answer.get("content") or {}).get("ok")
    return f"{'state-ok' if survived else 'state-missing'}: confirmed={confirmed}"


@mcp.tool()
def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Ask for a name, a sampled greeting and the roots, all in one round."""
    ctx.request_state["asked"] = 3
    answers = ctx.ask({
        "user_name": mrtr.elicitation("What is your name?", NAME_SCHEMA),
        "greeting": mrtr.sampling(
            [{"role": "user", "content": {"type": "text", "text": "Say hello"}}], 50
        ),
        "client_roots": mrtr.roots(),
    })  # fmt: skip
    name = (answers["user_name"].get("content") or {}).get("name")
    roots = len(answers["client_roots"]["roots"])
    return f"name={name}, greeting={_text(answers['greeting'])!r}, roots={roots}"


@mcp.tool()
def test_input_required_result_multi_round(ctx: Context) -> str:
    """Ask for a name, then (in a second round) for a favourite color."""
    name = ctx.elicit("What is your name?", NAME_SCHEMA, key="step1")
    ctx.request_state["step"] = 2
    color = ctx.elicit(
        "What is your favorite color?",
        {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        key="step2",
    )
    return (
        f"{(name.get('content') or {}).get('name')} likes "
        f"{(color.get('content') or {}).get('color')}"
    )


@mcp.tool()
def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Ask for a confirmation; a tampered requestState on the retry is refused."""
    ctx.request_state["guarded"] = True
    answer = ctx.elicit(
        "Please confirm",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        key="confirm",
    )
    return f"confirmed={(answer.get('content') or {}).get('ok')}"


@mcp.tool()
def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only for what the client declared: elicitation, else sampling, else roots."""
    caps = ctx.client_capabilities
    if "elicitation" in caps:
        answer = ctx.elicit("What is your name?", NAME_SCHEMA)
        return f"elicited: {answer.get('action')}"
    if "sampling" in caps:
        return f"sampled: {_text(ctx.create_message(CAPITAL, max_tokens=100))}"
    if "roots" in caps:
        return f"roots: {len(ctx.list_roots())}"
    return "The client declared no capability to ask with."


@mcp.prompt()
def test_input_required_result_prompt(ctx: Context) -> list[dict[str, t.Any]]:
    """A prompt that first asks the user which context to use (MRTR on prompts/get)."""
    answer = ctx.elicit(
        "What context should the prompt use?",
        {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]},
        key="user_context",
    )
    context = (answer.get("content") or {}).get("context", "")
    return [content.message("user", f"Use this context: {context}")]


#: Caching hints of the reference server: lists and discovery are public for
#: five minutes; reads stay private (the library's default).
CACHE_CONFIG = {"MCP_CACHE_TTL_MS": 300_000, "MCP_CACHE_SCOPE": "public"}


# ---------------------------------------------------------------------------
# Resources (§2.2). test://static-text must stay first.
# ---------------------------------------------------------------------------


@mcp.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a 1x1 PNG image)."""
    return base64.b64decode(IMG)


@mcp.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> str:  # noqa: A002 - the template variable is named id
    """JSON data for any ID."""
    return json.dumps(
        {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
    )


@mcp.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# ---------------------------------------------------------------------------
# Prompts and completion (§2.3, §2.4).
# ---------------------------------------------------------------------------


@mcp.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@mcp.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[dict[str, t.Any]]:
    """A prompt with two required arguments.

    :param arg1: the first argument.
    :param arg2: the second argument.
    """
    return [content.message("user", f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@mcp.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, t.Any]]:  # noqa: N803
    """A prompt that embeds a resource.

    :param resourceUri: the URI of the resource to embed.
    """
    return [
        content.message(
            "user",
            content.embedded(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            ),
        ),
        content.message("user", "Please process the embedded resource above."),
    ]


@mcp.prompt()
def test_prompt_with_image() -> list[dict[str, t.Any]]:
    """A prompt that includes an image."""
    return [
        content.message("user", content.image(IMG, "image/png")),
        content.message("user", "Please analyze the image above."),
    ]


@mcp.completion("prompt", "test_prompt_with_arguments")
def complete_prompt_arguments(
    argument: str, value: str, context_arguments: dict[str, str]
) -> list[str]:
    """Suggest values for arg1 and arg2 that start with what was typed."""
    candidates = {
        "arg1": ["test", "test1", "test2", "testValue1", "example"],
        "arg2": ["test", "testValue2", "sample", "value"],
    }.get(argument, [])
    return [c for c in candidates if c.startswith(value)]


# -- tasks (io.modelcontextprotocol/tasks at 2026-07-28; experimental tasks at 2025-11-25) --


@mcp.tool()
def greet(name: str) -> str:
    """Greet someone at once (a plain tool: never a task)."""
    return f"Hello, {name}!"


def _sleep(ctx: Context, seconds: float) -> None:
    """Sleep in small steps, reporting progress and stopping when the task is cancelled."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ctx.check_cancelled()
        left = end - time.monotonic()
        ctx.progress(seconds - left, seconds, f"{max(left, 0):.1f} s left")
        time.sleep(min(0.1, max(left, 0)))


@mcp.tool(task="optional")
def slow_compute(ctx: Context, seconds: float = 1.0, label: str = "") -> str:
    """Sleep ``seconds`` seconds, then answer; runs as a task for clients that support tasks."""
    _sleep(ctx, seconds)
    return f"Computed {label or 'result'} after {seconds:g} s"


@mcp.tool(task="required")
def failing_job(ctx: Context) -> str:
    """Fail as a tool (``isError``) after about a second; must run as a task."""
    _sleep(ctx, 1.0)
    raise ToolError("failing_job failed on purpose")


@mcp.tool(task="optional")
def protocol_error_job(ctx: Context) -> str:
    """Fail with a JSON-RPC error (not a tool error) after a moment."""
    _sleep(ctx, 0.3)
    raise MCPError(-32603, "protocol_error_job failed with a protocol error on purpose")


@mcp.tool(task="optional")
def confirm_delete(ctx: Context, filename: str = "file.txt") -> str:
    """Ask the user to confirm deleting ``filename`` (the task waits in input_required)."""
    answer = ctx.elicit(
        f"Delete {filename}?",
        {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
    )
    confirmed = answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm")
    return f"{filename} {'deleted' if confirmed else 'kept'}"


@mcp.tool(task="optional")
def multi_input(ctx: Context) -> str:
    """Ask two questions at once: both are outstanding together."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    answers = ctx.ask({
        "first": mrtr.elicitation("First name?", schema),
        "second": mrtr.elicitation("Second name?", schema),
    })  # fmt: skip
    names = [(a.get("content") or {}).get("name") for a in answers.values()]
    return f"Got {', '.join(str(n) for n in names)}"


def _ask_user_name(ctx: Context) -> str | None:
    """Ask the name in the request, before the task starts (2026-07-28: MRTR rounds)."""
    answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return t.cast("str | None", (answer.get("content") or {}).get("name"))


@mcp.tool(task="required", prepare=_ask_user_name)
def test_tool_with_task(ctx: Context) -> str:
    """Ask the name first (MRTR), then work on it as a task."""
    _sleep(ctx, 0.5)
    return f"Hello, {ctx.prepared}! (from a task)"


def shared_dev_secret() -> str:
    """Return a random key generated once per user and shared by every worker process.

    2026-07-28 multi-round requests seal their ``requestState`` with ``SECRET_KEY``
    and a retry may reach another gunicorn worker, so the workers must agree on
    the key. This demo keeps it in a private file in the temp directory; set
    ``SECRET_KEY`` (or ``FLASK_SECRET_KEY``) instead in production.
    """
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = Path(tempfile.gettempdir()) / f"flask-mcp-everything-{uid or 'user'}.key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(100):  # another worker may still be writing it
            info = path.lstat()
            foreign = uid is not None and info.st_uid != uid
            if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or foreign:
                break  # not a private file of this user: do not trust it
            key = path.read_text().strip()
            if key:
                return key
            time.sleep(0.01)
        return secrets.token_hex(32)
    key = secrets.token_hex(32)
    with os.fdopen(fd, "w") as file:
        file.write(key)
    return key


def create_app() -> Flask:
    """Return a Flask app serving the conformance server at ``MCP_PATH`` (``/mcp``)."""
    app = Flask(__name__)
    app.config["SECRET_KEY"] = os.environ.get("SECRET_KEY") or shared_dev_secret()
    app.config.update(CACHE_CONFIG)
    app.config.from_prefixed_env()
    mcp.init_app(app)
    return app


app = create_app()
