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
import time
import typing as t

from flask import Flask

from flask_mcp import MCP, Context, MCPError, ToolError, content

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
# 2026-07-28 leg (§4.4) fixtures that are harmless in the handshake era.
# The list-change triggers, MRTR and x-mcp-header fixtures are not here yet.
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


def create_app() -> Flask:
    """Return a Flask app serving the conformance server at ``MCP_PATH`` (``/mcp``)."""
    app = Flask(__name__)
    app.config["SECRET_KEY"] = os.environ.get("SECRET_KEY") or secrets.token_hex(32)
    app.config.from_prefixed_env()
    mcp.init_app(app)
    return app


app = create_app()
