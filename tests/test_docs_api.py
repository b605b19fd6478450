"""The API reference documents every public name of ``flask_mcp``."""

from __future__ import annotations

import re
from pathlib import Path

API_REFERENCE = (Path(__file__).resolve().parent.parent / "docs" / "api.rst").read_text()
AUTODOC = re.compile(
    r"^\.\. (?:auto(?:class|function|exception|data|module|attribute)|module)::\s+(\S+)",
    re.MULTILINE,
)


def documented_names(text: str) -> set[str]:
    """Return the ``flask_mcp`` names an API page documents with autodoc directives.

    A bare name is in the module of the last ``.. module::`` directive above it; a module
    documented with ``automodule`` counts as its own name (``flask_mcp.content``).
    """
    names: set[str] = set()
    module = ""
    for match in AUTODOC.finditer(text):
        target = match[1]
        if match[0].startswith(".. module::"):
            module = target
            continue
        full = target if target.startswith("flask_mcp") else f"{module}.{target}"
        if full.startswith("flask_mcp.") and full.count(".") == 1:
            names.add(full.split(".", 1)[1])
    return names


def test_api_reference_documents_every_public_name() -> None:
    import importlib.util

    import flask_mcp

    documented = documented_names(API_REFERENCE)
    missing = sorted(set(flask_mcp.__all__) - documented)
    # a public module (flask_mcp.testing) is documented without being in __all__
    extra = sorted(
        name
        for name in documented - set(flask_mcp.__all__)
        if importlib.util.find_spec(f"flask_mcp.{name}") is None
    )
    assert not missing, f"add to docs/api.rst: {missing}"
    assert not extra, f"documented in docs/api.rst but not in flask_mcp.__all__: {extra}"


def test_documented_names_reads_bare_and_module_names() -> None:
    text = ".. module:: flask_mcp\n\n.. autoclass:: MCP\n\n.. automodule:: flask_mcp.content\n"
    assert documented_names(text) == {"MCP", "content"}
    assert documented_names(".. autoclass:: flask_mcp.testing.MCPTestClient\n") == set()
