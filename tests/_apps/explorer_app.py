"""The app the explorer's browser tests open: tools of every argument shape, progress,
elicitation, a slow tool to cancel, an MCP App view with an app-only tool, a resource
template with completion (and one with RFC 6570 operators and modifiers) and a prompt.

``MCP_TEST_EXPLORER`` picks the configuration: ``debug`` (the default: app.debug, no
access check), ``off`` (MCP_EXPLORER = False under debug), ``guarded`` (outside debug, the
access check lets in requests with the cookie ``explorer=yes``). ``MCP_TEST_EXPLORER_SANDBOX``
sets ``MCP_EXPLORER_SANDBOX_ORIGIN``, ``MCP_TEST_EXPLORER_CLIENT_TIMEOUT``
``MCP_CLIENT_REQUEST_TIMEOUT``.

The views are declared with the MCP Apps API (``@mcp.ui``, ``mcp.ui_template``,
``@mcp.tool(ui=..., visibility=[...])``), so the explorer reads what the extension emits.
``counter`` gives ``structuredContent`` only to clients that declare the extension, as a
real Apps tool may: its view shows nothing without it.
"""

from __future__ import annotations

import base64
import enum
import os
import threading
import time
import typing as t

from flask import Flask
from flask import request

from flask_mcp import MCP
from flask_mcp import ClientRequestError
from flask_mcp import ClientRequestTimeout
from flask_mcp import Context
from flask_mcp import RequestCancelled
from flask_mcp import ToolError
from flask_mcp import ToolResult
from flask_mcp import URLElicitationRequired
from flask_mcp.content import embedded
from flask_mcp.content import image
from flask_mcp.content import text
from flask_mcp.extensions.apps import helper_source

mcp = MCP(
    name="explorer-demo",
    version="1.2.3",
    title="Explorer demo",
    instructions="Try every tool here; counter_view shows a counter the view can bump.",
)

COUNTER_VIEW = "ui://demo/counter"
_counter = {"value": 0}
_lock = threading.Lock()


class Traveller(t.TypedDict):
    """Who travels."""

    name: str
    age: int


class Unit(str, enum.Enum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


@mcp.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def describe_trip(
    city: str,
    nights: int,
    unit: Unit = Unit.celsius,
    budget: float | None = None,
    refundable: bool = False,
    stops: list[str] | None = None,
    traveller: Traveller | None = None,
    extras: dict[str, t.Any] | None = None,
) -> dict[str, t.Any]:
    """Echo a trip built from arguments of every shape (structured output)."""
    return {
        "city": city,
        "nights": nights,
        "unit": unit.value,
        "budget": budget,
        "refundable": refundable,
        "stops": stops or [],
        "traveller": traveller or {},
        "extras": extras or {},
    }


@mcp.tool()
def count_slowly(steps: int, ctx: Context) -> str:
    """Count to ``steps``, reporting progress and logging each step."""
    for step in range(1, steps + 1):
        ctx.info(f"step {step} of {steps}")
        ctx.progress(step, steps, f"step {step}")
        time.sleep(0.2)
    return f"counted to {steps}"


@mcp.tool()
def book_table(restaurant: str, ctx: Context) -> str:
    """Ask the user how many guests, then book (``wait_status("booking")`` says what the
    last question got: asking, an action, or refused with the client's error)."""
    _waits["booking"] = "asking"
    try:
        answer = ctx.elicit(
            f"How many guests at {restaurant}?",
            {
                "type": "object",
                "properties": {
                    "guests": {"type": "integer", "minimum": 1, "title": "Guests"},
                    "seating": {
                        "type": "string",
                        "enum": ["inside", "terrace"],
                        "title": "Seating",
                    },
                },
                "required": ["guests"],
            },
        )
    except ClientRequestError as exc:
        _waits["booking"] = f"refused: {exc}"
        raise
    _waits["booking"] = str(answer["action"])
    if answer["action"] != "accept":
        raise ToolError(f"Booking {answer['action']}ed by the user.")
    content = answer["content"]
    return f"Booked {restaurant} for {content['guests']} ({content.get('seating', 'any seat')})."


@mcp.tool()
def ask_with_defaults(ctx: Context) -> dict[str, t.Any]:
    """Ask a question whose fields have defaults (SEP-1034); return what was answered."""
    answer = ctx.elicit(
        "Keep these settings?",
        {
            "type": "object",
            "properties": {
                "notify": {"type": "boolean", "default": True, "title": "Notify"},
                "archive": {"type": "boolean", "default": False, "title": "Archive"},
                "guests": {"type": "integer", "default": 2, "title": "Guests"},
            },
        },
    )
    return {"action": answer["action"], "content": answer.get("content")}


@mcp.tool()
def ask_briefly(ctx: Context) -> str:
    """Ask a question, go on without the answer once MCP_CLIENT_REQUEST_TIMEOUT is over."""
    try:
        ctx.elicit("Answer quickly?", {"type": "object", "properties": {}})
    except ClientRequestTimeout:
        ctx.info("went on without an answer")
        time.sleep(1)
        return "no answer"
    return "answered"


@mcp.tool()
def paint(ctx: Context) -> str:
    """Ask for one colour and some trims, offered as titled enums (const and title)."""
    answer = ctx.elicit(
        "Which colours?",
        {
            "type": "object",
            "properties": {
                "colour": {
                    "type": "string",
                    "title": "Colour",
                    "oneOf": [
                        {"const": "#ff0000", "title": "Red"},
                        {"const": "#00ff00", "title": "Green"},
                    ],
                },
                "trims": {
                    "type": "array",
                    "title": "Trims",
                    "items": {
                        "anyOf": [
                            {"const": "#000000", "title": "Black"},
                            {"const": "#ffffff", "title": "White"},
                        ]
                    },
                },
            },
            "required": ["colour"],
        },
    )
    if answer["action"] != "accept":
        raise ToolError(f"Painting {answer['action']}ed by the user.")
    content = answer["content"]
    return f"Painted {content['colour']} with {', '.join(content.get('trims', []))} trims."


@mcp.tool(headers={"region": "Region"})
def forecast(region: str) -> str:
    """The forecast of a region (2026-07-28 clients repeat it in the Mcp-Param-Region header)."""
    return f"Sunny in {region}."


@mcp.tool()
def find(query: str, language: str | None = None) -> str:
    """Find ``query``, in ``language`` when one is given (an optional string)."""
    return f"{query} in {language or 'any language'}"


@mcp.tool()
def tag(note: str | None, color: str | None = "blue") -> dict[str, t.Any]:
    """Return the arguments given: ``note`` is required but may be null, ``color`` may be
    null, which is not its default."""
    return {"note": note, "color": color}


@mcp.tool()
def big_numbers() -> dict[str, t.Any]:
    """Return integers past 2**53, which a JavaScript number cannot hold exactly."""
    return {"exact": 2**53 + 1, "negative": -(2**60) - 1, "listed": [2**62 + 7], "safe": 2**53 - 1}


@mcp.tool()
def echo_integers(value: int, more: list[int] | None = None) -> dict[str, t.Any]:
    """Return the integers given, which may be past 2**53."""
    return {"value": value, "more": more}


@mcp.tool()
def pick_big(choice: t.Literal[9007199254740993, 9007199254740992, 7]) -> dict[str, int]:
    """Return the choice given, of an enum of integers past 2**53."""
    return {"choice": choice}


@mcp.tool()
def add_a_tool(name: str) -> str:
    """Declare a tool named ``name`` while serving: clients hear that the tool list changed."""

    def made_at_run_time() -> str:
        return f"I am {name}, made at run time."

    mcp.tool(name=name, description="A tool declared while serving.")(made_at_run_time)
    return f"declared {name}"


@mcp.tool()
def remove_a_tool(name: str) -> str:
    """Remove the tool named ``name`` while serving: clients hear that the tool list changed."""
    return f"removed {name}" if mcp.remove_tool(name) else f"no tool {name}"


#: A 1x1 PNG, returned as an image block.
DOT_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
    "AAAABJRU5ErkJggg=="
)


@mcp.tool()
def haiku(topic: str, ctx: Context) -> ToolResult:
    """Ask the model for a haiku (sampling) and the client for its roots; return both and a dot."""
    roots = ctx.list_roots()
    answer = ctx.create_message(
        [{"role": "user", "content": {"type": "text", "text": f"A haiku about {topic}"}}],
        max_tokens=60,
    )
    where = ", ".join(root["uri"] for root in roots) or "no roots"
    return ToolResult(
        content=[
            text(f"{answer['model']} wrote: {answer['content']['text']} (roots: {where})"),
            image(DOT_PNG, "image/png"),
        ]
    )


#: A tiny WAV file, returned as an embedded resource's blob.
TICK_WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
#: Bytes that no browser renders: offered as a download.
REPORT_BYTES = b"%PDF-1.4 not really a report\n" + bytes(range(256))


@mcp.tool()
def attachments() -> ToolResult:
    """Return embedded resources holding blobs: an image, a sound and a report."""
    return ToolResult(
        content=[
            embedded(
                "files://pictures/dot.png", blob=base64.b64decode(DOT_PNG), mime_type="image/png"
            ),
            embedded(
                "files://sounds/tick.wav", blob=base64.b64decode(TICK_WAV), mime_type="audio/wav"
            ),
            embedded("files://reports/q3.pdf", blob=REPORT_BYTES, mime_type="application/pdf"),
        ]
    )


@mcp.resource("files://reports/q4.bin", mime_type="application/octet-stream")
def report_q4() -> bytes:
    """The fourth quarter's report, in a format no browser shows."""
    return REPORT_BYTES


#: Where connect_calendar sends the user (a page outside the app: the tests never open it).
CALENDAR_URL = "https://calendar.example.com/connect?elicitationId=calendar-1"


@mcp.tool()
def connect_calendar() -> str:
    """Need the user to connect a calendar first: error -32042 in 2025-11-25."""
    raise URLElicitationRequired(
        [
            {
                "mode": "url",
                "elicitationId": "calendar-1",
                "url": CALENDAR_URL,
                "message": "Connect your calendar to book a table.",
            },
            {
                "mode": "url",
                "elicitationId": "calendar-2",
                "url": "javascript:alert(1)",
                "message": "A link the page must not make clickable.",
            },
        ],
        "Your calendar is not connected.",
    )


#: Where connect_drive sends the user (outside the app: the tests never open it).
DRIVE_URL = "https://drive.example.com/connect"
#: The sessions whose drive is connected (GET /drive/connected?elicitationId=drive-SESSION).
_drives: set[str] = set()


@mcp.tool()
def connect_drive(ctx: Context) -> str:
    """Need a drive connected out of band (-32042) until ``/drive/connected`` says it is."""
    require_drive(ctx)
    return "drive connected"


@mcp.resource("drive://files")
def drive_files(ctx: Context) -> str:
    """The files of the drive, once connected out of band (-32042, as ``connect_drive``)."""
    require_drive(ctx)
    return "the drive's files"


@mcp.prompt()
def drive_summary(ctx: Context) -> str:
    """Summarize the drive, once connected out of band (-32042, as ``connect_drive``)."""
    require_drive(ctx)
    return "Summarize the drive."


def require_drive(ctx: Context) -> None:
    """Raise -32042 until ``/drive/connected`` says the session's drive is connected."""
    if ctx.session_id in _drives:
        return
    elicitation_id = f"drive-{ctx.session_id}"
    raise URLElicitationRequired(
        [
            {
                "mode": "url",
                "elicitationId": elicitation_id,
                "url": f"{DRIVE_URL}?elicitationId={elicitation_id}",
                "message": "Connect your drive.",
            }
        ],
        "Your drive is not connected.",
    )


def drive_connected() -> str:
    """The end of the out-of-band flow: the drive is connected; tell the session."""
    elicitation_id = request.args["elicitationId"]
    session_id = elicitation_id.removeprefix("drive-")
    _drives.add(session_id)
    mcp.notify_elicitation_complete(session_id, elicitation_id)
    return "connected"


@mcp.tool()
def link_account(ctx: Context) -> str:
    """Ask the user to open a page (URL mode), then say its interaction completed."""
    answer = ctx.elicit_url("Link your account.", "https://accounts.example.com/link", "account-1")
    if answer["action"] != "accept":
        return str(answer["action"])
    if ctx.session_id is not None:  # 2025-11-25: the notification exists
        mcp.notify_elicitation_complete(ctx.session_id, "account-1")
    return "linked"


#: What wait_status(of) tells: how the last wait_forever call ("last") or wait_as_task
#: task ("task") ended, what the last question of book_table ("booking") or build_report
#: ("report") got.
_waits = {"last": "none", "task": "none", "booking": "none", "report": "none"}


@mcp.tool()
def wait_forever(ctx: Context) -> str:
    """Wait until cancelled (at most two minutes), reporting progress every half second."""
    _waits["last"] = "running"
    ctx.info("waiting to be cancelled")
    try:
        for tick in range(240):
            ctx.check_cancelled()
            ctx.progress(tick, None, "waiting")  # a closed response fails this write
            time.sleep(0.5)
    finally:
        _waits["last"] = "cancelled" if ctx.cancelled else "ended"
    return "never cancelled"


@mcp.tool(task="required")
def build_report(rows: int, ctx: Context) -> str:
    """Build a report as a task (progress is its status message), then ask before publishing."""
    for row in range(1, rows + 1):
        ctx.check_cancelled()
        ctx.progress(row, rows, f"row {row} of {rows}")
        time.sleep(0.2)
    _waits["report"] = "asking"
    try:
        answer = ctx.elicit(
            f"Publish the report of {rows} rows?",
            {
                "type": "object",
                "properties": {"publish": {"type": "boolean", "title": "Publish"}},
                "required": ["publish"],
            },
        )
    except ClientRequestError as exc:
        _waits["report"] = f"refused: {exc}"
        raise
    except RequestCancelled:  # also when the task's record says so before ctx does
        _waits["report"] = "cancelled"
        raise
    _waits["report"] = str(answer["action"])
    published = answer["action"] == "accept" and answer["content"]["publish"]
    return f"report of {rows} rows {'published' if published else 'kept'}"


@mcp.tool(task="optional")
def echo_later(text: str) -> str:
    """Echo ``text``, as a task or not (the caller chooses)."""
    return f"echo: {text}"


@mcp.tool(task="required")
def wait_as_task(ctx: Context) -> str:
    """Wait as a task until cancelled (at most two minutes)."""
    _waits["task"] = "running"
    try:
        for tick in range(240):
            ctx.check_cancelled()
            ctx.progress(tick, None, "waiting")
            time.sleep(0.5)
    finally:
        _waits["task"] = "cancelled" if ctx.cancelled else "ended"
    return "never cancelled"


@mcp.tool(annotations={"readOnlyHint": True})
def wait_status(of: str = "last") -> str:
    """How the last wait_forever call (``of="task"``: wait_as_task task) ended (running,
    cancelled...), or what the last question of book_table (``"booking"``), build_report
    (``"report"``) or bump_asked (``"bump"``) got."""
    return _waits[of]


@mcp.ui(COUNTER_VIEW, prefers_border=True)
def counter_view() -> str:
    """A view showing the counter, with a button calling the app-only tool ``bump``."""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Counter</title>"
        "<style>body{font:15px system-ui;margin:12px} #count{font-size:28px}</style></head><body>"
        "<p>Counter: <span id='count'>?</span></p>"
        "<button id='bump' type='button'>Bump</button> "
        "<button id='bump-later' type='button'>Bump as a task</button> "
        "<button id='bump-asked' type='button'>Bump by asked</button> <span id='said'></span>"
        f"<script>{helper_source()}</script>"
        "<script>"
        "const show = (r) => { document.getElementById('count').textContent ="
        " String(r.structuredContent.value); };"
        "const app = McpApp.connect({ name: 'Counter', version: '1.0.0', onToolResult: show });"
        "document.getElementById('bump').addEventListener('click', async () => {"
        " const r = await app.callTool('bump', { by: 1 }); show(r);"
        " document.getElementById('said').textContent = r.content[0].text; });"
        "document.getElementById('bump-later').addEventListener('click', async () => {"
        " const r = await app.callTool('bump_later', { by: 10 }); show(r);"
        " document.getElementById('said').textContent = r.content[0].text; });"
        "document.getElementById('bump-asked').addEventListener('click', async () => {"
        " const r = await app.callTool('bump_asked', {}); show(r);"
        " document.getElementById('said').textContent = r.content[0].text; });"
        "</script></body></html>"
    )


@mcp.tool(ui=COUNTER_VIEW)
def counter(ctx: Context, start: int = 0) -> ToolResult:
    """Show the counter in its view (reset to ``start``)."""
    with _lock:
        _counter["value"] = start
    structured = {"value": start} if ctx.client_supports_ui() else None
    return ToolResult(content=f"The counter is {start}.", structured=structured)


@mcp.tool(ui=COUNTER_VIEW, visibility=["app"])
def bump(by: int = 1) -> ToolResult:
    """Bump the counter (for the view only)."""
    with _lock:
        _counter["value"] += by
        value = _counter["value"]
    return ToolResult(content=f"bumped to {value}", structured={"value": value})


@mcp.tool(ui=COUNTER_VIEW, visibility=["app"])
def bump_asked(ctx: Context) -> ToolResult:
    """Ask the user by how much, then bump the counter (for the view only)."""
    schema = {"type": "object", "properties": {"by": {"type": "integer", "title": "By"}}}
    _waits["bump"] = "asking"
    answer = ctx.elicit("Bump by how much?", {**schema, "required": ["by"]})
    _waits["bump"] = str(answer["action"])
    if answer["action"] != "accept":
        raise ToolError(f"Bump {answer['action']}ed by the user.")
    return bump(int(answer["content"]["by"]))


NOTE_VIEW = "ui://demo/note"
#: A view from a template that asks the host for what ``_meta.ui`` can hold.
mcp.ui_template(
    NOTE_VIEW,
    "explorer_note.html",
    name="note_view",
    csp={
        "connectDomains": ["https://api.example.com"],
        "resourceDomains": ["https://cdn.example.com"],
    },
    permissions={"clipboardWrite": {}},
    domain="explorer-demo.example.com",
    prefers_border=False,
)


@mcp.tool(ui=NOTE_VIEW)
def note(text: str) -> str:
    """Show ``text`` in the note view."""
    return text


LISTED_VIEW = "ui://demo/listed"


@mcp.resource(
    LISTED_VIEW,
    name="listed_view",
    mime_type="text/html;profile=mcp-app",
    meta={
        "ui": {
            "csp": {"connectDomains": ["https://listed.example.com"]},
            "permissions": {"clipboardWrite": {}},
            "prefersBorder": False,
        }
    },
)
def listed_view() -> str:
    """A view whose ``_meta.ui`` is on its ``resources/list`` entry only, not on what
    ``resources/read`` returns: the host falls back to the entry's."""
    return "<!DOCTYPE html><html><body><p id='listed'>listed</p></body></html>"


@mcp.tool(ui=LISTED_VIEW)
def listed(text: str = "") -> str:
    """Show the view whose ``_meta.ui`` only ``resources/list`` carries."""
    return text


@mcp.tool(ui=COUNTER_VIEW, visibility=["app"], task="required")
def bump_later(by: int = 1) -> ToolResult:
    """Bump the counter as a task (for the view only): the host follows the task."""
    return bump(by)


CITIES = ["Paris", "Porto", "Prague", "Berlin"]


@mcp.resource("weather://{city}", name="weather", description="The weather of a city.")
def weather(city: str) -> str:
    """Today's weather of ``city``."""
    return f"Sunny in {city}."


@mcp.completion("resource", "weather://{city}", "city")
def complete_city(argument: str, value: str, context: dict[str, str]) -> list[str]:
    """Cities starting with what was typed."""
    return [city for city in CITIES if city.lower().startswith(value.lower())]


@mcp.resource("probe://{v:3}{;x,y}/{+path}{?q,tag*}", name="probe")
def probe(
    v: str, path: str, x: str = "-", y: str = "-", q: str = "-", tag: list[str] | None = None
) -> str:
    """The values the server matched in the URI: the explorer expands as RFC 6570 says."""
    return f"v={v} x={x} y={y} path={path} q={q} tag={tag}"


@mcp.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}."


@mcp.completion("prompt", "greet", "name")
def complete_name(argument: str, value: str, context: dict[str, str]) -> list[str]:
    """Names starting with what was typed."""
    return [name for name in ["Ada", "Alan", "Grace"] if name.startswith(value)]


@mcp.resource("echo://{text}/after/{seconds}", name="echo_after")
def echo_after_read(text: str, seconds: str) -> str:
    """Echo ``text`` after ``seconds``: a slow answer may arrive after a later one."""
    time.sleep(float(seconds))
    return f"Echo {text}"


@mcp.prompt()
def echo_after(text: str, seconds: str = "0") -> str:
    """Echo ``text`` after ``seconds``: a slow answer may arrive after a later one."""
    time.sleep(float(seconds))
    return f"Echo {text}"


@mcp.prompt()
def ask_after(question: str, ctx: Context, seconds: str = "0") -> str:
    """Ask ``question`` after ``seconds``: a slow question may arrive after a later one's."""
    time.sleep(float(seconds))
    answer = ctx.elicit(f"Answer {question}", {"type": "object", "properties": {}})
    return f"Asked {question}: {answer['action']}"


def create_app() -> Flask:
    mode = os.environ.get("MCP_TEST_EXPLORER", "debug")
    flask_app = Flask(__name__)
    flask_app.config["SECRET_KEY"] = "explorer-tests"
    if mode in ("debug", "off"):
        flask_app.debug = True
    if mode == "off":
        flask_app.config["MCP_EXPLORER"] = False
    if mode == "guarded":
        flask_app.config["MCP_EXPLORER"] = True
        flask_app.config["MCP_EXPLORER_ACCESS"] = lambda request: (
            request.cookies.get("explorer") == "yes"
        )
    if "MCP_TEST_EXPLORER_CLIENT_TIMEOUT" in os.environ:
        timeout = float(os.environ["MCP_TEST_EXPLORER_CLIENT_TIMEOUT"])
        flask_app.config["MCP_CLIENT_REQUEST_TIMEOUT"] = timeout
    flask_app.config["MCP_EXPLORER_SANDBOX_ORIGIN"] = os.environ.get("MCP_TEST_EXPLORER_SANDBOX")
    flask_app.add_url_rule("/drive/connected", view_func=drive_connected)
    mcp.init_app(flask_app)
    return flask_app


app = create_app()
