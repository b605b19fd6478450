"""A small note-taking MCP server: the Flask-MCP quickstart.

Run it with any of::

    gunicorn -k gevent -b 127.0.0.1:8000 examples.quickstart:app
    gunicorn -k gthread --threads 8 -b 127.0.0.1:8000 examples.quickstart:app
    flask --app examples.quickstart run

and point an MCP client at ``http://127.0.0.1:8000/mcp`` (Flask's development
server listens on port 5000 instead).

It shows each kind of thing an MCP server offers:

- tools: ``add``, ``convert_length`` (Literal and Enum parameters with
  defaults, structured output), ``search_notes``, ``save_note`` and
  ``word_stats`` (progress notifications and log messages through ``ctx``);
- a static resource, ``config://app`` (JSON);
- a resource template, ``notes://{name}``;
- a prompt with arguments, ``summarize_note``, with completion of its
  ``name`` and ``style`` arguments.
"""

from __future__ import annotations

import enum
import json
import os
import secrets
import threading
import time
import typing as t

from flask import Flask

from flask_mcp import MCP
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import ToolError
from flask_mcp import content
from flask_mcp.errors import RESOURCE_NOT_FOUND

mcp = MCP(
    name="notes",
    version="1.0.0",
    title="Notes",
    instructions=(
        "A tiny note store. Read notes through the notes://{name} resources, find them with "
        "search_notes and add them with save_note."
    ),
)

# An in-memory note store. A real application would use its database here.
_notes: dict[str, str] = {
    "groceries": "Milk, eggs, flour, and a bag of coffee beans.",
    "meeting": "Plan the Q3 roadmap. Alice presents metrics; Bob drafts the hiring plan.",
    "ideas": "Write a Flask extension for MCP. Add a notes demo. Ship it.",
}
_notes_lock = threading.Lock()

MAX_NOTE_LENGTH = 10_000
CONFIG = {
    "app": "notes",
    "version": "1.0.0",
    "max_note_length": MAX_NOTE_LENGTH,
    "features": {"search": True, "word_stats": True},
}


# -- tools -------------------------------------------------------------------


@mcp.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers.

    :param a: the first number.
    :param b: the second number.
    """
    return a + b


class LengthUnit(str, enum.Enum):
    """Units of length ``convert_length`` understands."""

    METER = "m"
    KILOMETER = "km"
    MILE = "mi"
    FOOT = "ft"


_METERS = {
    LengthUnit.METER: 1.0,
    LengthUnit.KILOMETER: 1000.0,
    LengthUnit.MILE: 1609.344,
    LengthUnit.FOOT: 0.3048,
}


class Conversion(t.TypedDict):
    """The result of a unit conversion."""

    value: float
    unit: str
    text: str


@mcp.tool(annotations={"readOnlyHint": True})
def convert_length(
    value: float,
    from_unit: LengthUnit = LengthUnit.KILOMETER,
    to_unit: LengthUnit = LengthUnit.MILE,
    precision: t.Literal[0, 1, 2, 3, 4] = 2,
) -> Conversion:
    """Convert a length between meters, kilometers, miles and feet.

    :param value: the length to convert.
    :param from_unit: the unit of the value.
    :param to_unit: the unit to convert to.
    :param precision: digits after the decimal point.
    """
    result = round(value * _METERS[from_unit] / _METERS[to_unit], precision)
    return {
        "value": result,
        "unit": to_unit.value,
        "text": f"{value:g} {from_unit.value} = {result:g} {to_unit.value}",
    }


@mcp.tool(annotations={"readOnlyHint": True})
def search_notes(
    query: str,
    match: t.Literal["any", "all"] = "any",
    limit: t.Annotated[int, {"minimum": 1, "maximum": 50}] = 5,
) -> list[str]:
    """Find notes containing the words of a query (case-insensitive).

    :param query: words to look for.
    :param match: whether a note must contain any or all of the words.
    :param limit: the largest number of note names to return.
    """
    words = query.lower().split()
    if not words:
        raise ToolError("The query is empty: pass at least one word.")
    test = all if match == "all" else any
    with _notes_lock:
        found = [name for name, text in _notes.items() if test(w in text.lower() for w in words)]
    return found[:limit]


@mcp.tool()
def save_note(name: str, text: str) -> str:
    """Create or replace a note; subscribers of its resource are told it changed.

    :param name: the note's name (letters, digits, - and _).
    :param text: the note's text.
    """
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ToolError(f"Invalid note name {name!r}: use letters, digits, '-' and '_'.")
    if len(text) > MAX_NOTE_LENGTH:
        raise ToolError(f"The note is too long (at most {MAX_NOTE_LENGTH} characters).")
    with _notes_lock:
        created = name not in _notes
        _notes[name] = text
    mcp.notify_resource_updated(f"notes://{name}")
    return f"{'Created' if created else 'Updated'} note {name!r}."


@mcp.tool(annotations={"readOnlyHint": True})
def word_stats(ctx: Context) -> dict[str, int]:
    """Count the words of every note, reporting progress as it goes."""
    with _notes_lock:
        notes = dict(_notes)
    ctx.info(f"Counting words in {len(notes)} notes")
    counts: dict[str, int] = {}
    for done, (name, text) in enumerate(sorted(notes.items()), start=1):
        ctx.check_cancelled()
        counts[name] = len(text.split())
        ctx.log("debug", {"note": name, "words": counts[name]}, logger="word_stats")
        ctx.progress(done, len(notes), f"Counted {name}")
        time.sleep(0.05)  # stand-in for real work
    ctx.info("Done")
    return counts


# -- resources ---------------------------------------------------------------


@mcp.resource(
    "config://app", name="config", title="Server configuration", mime_type="application/json"
)
def app_config() -> str:
    """The server's configuration, as JSON."""
    return json.dumps(CONFIG, indent=2)


@mcp.resource("notes://{name}", name="note", title="A note", mime_type="text/markdown")
def read_note(name: str) -> str:
    """The text of one note."""
    with _notes_lock:
        text = _notes.get(name)
    if text is None:
        uri = f"notes://{name}"
        raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
    return f"# {name}\n\n{text}\n"


# -- prompts and completion --------------------------------------------------

STYLES = ["bullet points", "one sentence", "haiku", "action items"]


@mcp.prompt(title="Summarize a note")
def summarize_note(name: str, style: str = "bullet points") -> list[dict[str, t.Any]]:
    """Ask the model to summarize one note.

    :param name: the note to summarize.
    :param style: how to write the summary (bullet points, one sentence, haiku...).
    """
    with _notes_lock:
        text = _notes.get(name)
    if text is None:
        raise MCPError(-32602, f"Unknown note {name!r}.")
    return [
        content.message(
            "user", content.embedded(f"notes://{name}", text=text, mime_type="text/markdown")
        ),
        content.message("user", f"Summarize the note above as {style}."),
    ]


@mcp.completion("prompt", "summarize_note")
def complete_summarize_note(
    argument: str, value: str, context_arguments: dict[str, str]
) -> list[str]:
    """Suggest note names and summary styles starting with what was typed."""
    if argument == "name":
        with _notes_lock:
            candidates = sorted(_notes)
    elif argument == "style":
        candidates = STYLES
    else:
        return []
    return [c for c in candidates if c.lower().startswith(value.lower())]


@mcp.completion("resource", "notes://{name}")
def complete_note_name(argument: str, value: str, context_arguments: dict[str, str]) -> list[str]:
    """Suggest note names for the ``notes://{name}`` template."""
    with _notes_lock:
        return [name for name in sorted(_notes) if name.startswith(value)]


def create_app() -> Flask:
    """Return a Flask app serving the notes server at ``/mcp``.

    ``FLASK_*`` environment variables configure it, for example
    ``FLASK_MCP_PATH=/notes/mcp`` or ``FLASK_SECRET_KEY=...``.
    """
    app = Flask(__name__)
    app.config["SECRET_KEY"] = os.environ.get("SECRET_KEY") or secrets.token_hex(32)
    app.config.from_prefixed_env()
    mcp.init_app(app)

    @app.get("/")
    def index() -> dict[str, t.Any]:
        return {"name": "notes", "mcp": app.config["MCP_PATH"]}

    return app


app = create_app()
