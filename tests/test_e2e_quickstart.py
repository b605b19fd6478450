"""The official ``mcp`` Python client (2.3, protocol 2025-11-25) against examples/quickstart.py."""

from __future__ import annotations

import json
import typing as t

import anyio
import mcp_types as types
import pytest
from harness import SERVERS
from harness import start_server
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # handshake-era calls in mcp 2.3
]


@pytest.fixture(params=[*SERVERS, "dev"], scope="module")
def quickstart(request: pytest.FixtureRequest) -> t.Iterator[t.Any]:
    with start_server("examples.quickstart:app", request.param, threads=8) as server:
        yield server


def test_every_quickstart_feature(quickstart: t.Any) -> None:
    logs: list[t.Any] = []
    progress: list[float] = []
    messages: list[t.Any] = []

    async def on_log(params: t.Any) -> None:
        logs.append(params)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_message(message: t.Any) -> None:
        messages.append(message)

    async def main() -> None:
        async with (
            streamable_http_client(quickstart.url) as (read, write),
            ClientSession(read, write, logging_callback=on_log, message_handler=on_message) as s,
        ):
            init = await s.initialize()
            assert init.protocol_version == "2025-11-25"
            assert init.server_info.name == "notes"
            await s.set_logging_level("debug")

            names = [tool.name for tool in (await s.list_tools()).tools]
            assert names == ["add", "convert_length", "search_notes", "save_note", "word_stats"]
            result = await s.call_tool("add", {"a": 2, "b": 40})
            assert result.structured_content == {"result": 42}
            result = await s.call_tool(
                "convert_length", {"value": 1, "from_unit": "mi", "to_unit": "ft", "precision": 0}
            )
            assert result.structured_content is not None
            assert result.structured_content["value"] == 5280
            assert (await s.call_tool("convert_length", {"value": 1, "from_unit": "pc"})).is_error
            found = await s.call_tool("search_notes", {"query": "coffee eggs", "match": "all"})
            assert found.structured_content == {"result": ["groceries"]}
            assert (await s.call_tool("search_notes", {"query": "   "})).is_error

            await s.subscribe_resource("notes://todo")
            saved = await s.call_tool("save_note", {"name": "todo", "text": "Write the README."})
            assert not saved.is_error
            stats = await s.call_tool("word_stats", {}, progress_callback=on_progress)
            assert stats.structured_content is not None and stats.structured_content["todo"] == 3
            assert progress == [1, 2, 3, 4]
            assert len(logs) >= 4

            resources = (await s.list_resources()).resources
            assert [str(r.uri) for r in resources] == ["config://app"]
            templates = (await s.list_resource_templates()).resource_templates
            assert [tpl.uri_template for tpl in templates] == ["notes://{name}"]
            config = await s.read_resource("config://app")
            assert json.loads(config.contents[0].text)["app"] == "notes"  # type: ignore[union-attr]
            note = await s.read_resource("notes://groceries")
            assert note.contents[0].text.startswith("# groceries")  # type: ignore[union-attr]
            with pytest.raises(Exception, match="not found|Not found|no note"):
                await s.read_resource("notes://nope")

            prompts = (await s.list_prompts()).prompts
            assert [p.name for p in prompts] == ["summarize_note"]
            prompt = await s.get_prompt("summarize_note", {"name": "meeting", "style": "haiku"})
            assert prompt.messages[0].content.type == "resource"
            assert "haiku" in prompt.messages[1].content.text  # type: ignore[union-attr]

            ref = types.PromptReference(type="ref/prompt", name="summarize_note")
            assert (await s.complete(ref, {"name": "name", "value": "g"})).completion.values == [
                "groceries"
            ]
            template_ref = types.ResourceTemplateReference(
                type="ref/resource", uri="notes://{name}"
            )
            completion = await s.complete(template_ref, {"name": "name", "value": "m"})
            assert completion.completion.values == ["meeting"]
            with anyio.move_on_after(3):
                while not any(
                    "resources/updated" in repr(m) or "ResourceUpdated" in repr(m) for m in messages
                ):
                    await anyio.sleep(0.05)
            assert any(
                "resources/updated" in repr(m) or "ResourceUpdated" in repr(m) for m in messages
            )

    anyio.run(main)
