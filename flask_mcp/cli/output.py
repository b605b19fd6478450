"""How the commands print results: readable text, or JSON with ``--json``/``--raw``."""

from __future__ import annotations

import json
import typing as t

import click


def dump(value: t.Any) -> str:
    """Indented JSON, as ``--json`` prints it."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def first_line(text: t.Any) -> str:
    """The first line of a description (empty when there is none)."""
    return str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""


def table(rows: t.Sequence[tuple[str, str]]) -> str:
    """Two columns: names padded to the longest, then descriptions."""
    if not rows:
        return "  (none)"
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name.ljust(width)}  {text}".rstrip() for name, text in rows)


def block_text(block: dict[str, t.Any]) -> str:
    """One content block as text: text as is, binary data as a one-line summary."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        size = len(str(block.get("data", ""))) * 3 // 4
        return f"[{kind} {block.get('mimeType', '?')}, about {size} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.get('uri')}]"
    if kind == "resource":
        return contents_text(block.get("resource") or {})
    return dump(block)


def contents_text(contents: dict[str, t.Any]) -> str:
    """One item of a resource's contents as text."""
    if "text" in contents:
        return str(contents["text"])
    size = len(str(contents.get("blob", ""))) * 3 // 4
    return f"[{contents.get('mimeType', 'binary')} {contents.get('uri')}, about {size} bytes]"


def tool_result(result: dict[str, t.Any]) -> str:
    """A ``tools/call`` result: its content blocks, or its structured content alone."""
    blocks = result.get("content") or []
    if blocks:
        return "\n".join(block_text(block) for block in blocks)
    if "structuredContent" in result:
        return dump(result["structuredContent"])
    return ""


def prompt_result(result: dict[str, t.Any]) -> str:
    """A ``prompts/get`` result: each message as ``role: text``."""
    lines = []
    if result.get("description"):
        lines.append(f"# {result['description']}")
    for message in result.get("messages") or []:
        lines.append(f"{message.get('role')}: {block_text(message.get('content') or {})}")
    return "\n".join(lines)


def notification(message: dict[str, t.Any]) -> None:
    """Print a handler's progress or log message on stderr."""
    params = message.get("params") or {}
    if message.get("method") == "notifications/progress":
        total = params.get("total")
        done = f"{params.get('progress')}" + (f"/{total}" if total is not None else "")
        text = f"progress {done}" + (f" {params['message']}" if params.get("message") else "")
    elif message.get("method") == "notifications/message":
        data = params.get("data")
        text = f"{params.get('level')}: {data if isinstance(data, str) else json.dumps(data)}"
        if params.get("logger"):
            text = f"[{params['logger']}] {text}"
    else:
        text = json.dumps(message)
    click.echo(text, err=True)


def schema_lines(schema: t.Any, indent: str = "    ") -> str:
    """A schema as indented JSON, for ``inspect``."""
    return "\n".join(indent + line for line in dump(schema).splitlines())


__all__ = [
    "block_text",
    "contents_text",
    "dump",
    "first_line",
    "notification",
    "prompt_result",
    "schema_lines",
    "table",
    "tool_result",
]
