"""Sphinx extension of the Flask-MCP docs.

- ``.. mcp-config::`` (in MyST: a ``{mcp-config}`` fence) renders every key of
  :data:`flask_mcp.config.KEYS` as a ``confval`` entry: name, the type of the value the
  code uses (from :class:`flask_mcp.config.Settings`), the default the code applies, the
  environment variable, and the key's own documentation. The page therefore lists
  exactly the keys the code reads: it cannot drift. Reference a key with
  ``{confval}`MCP_PATH``` (MyST) or ``:confval:`MCP_PATH``` (reST).
- Public names live in internal modules (``flask_mcp.server.context.Context`` is
  documented as ``flask_mcp.Context``). Type hints and docstrings name the internal
  module; :func:`resolve_public_alias` points such a reference to the public entry.
"""

from __future__ import annotations

import dataclasses
import typing as t

from docutils import nodes
from docutils import utils
from docutils.parsers.rst import Parser as RSTParser
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import SphinxDirective

#: Modules whose names are documented under their own module name in the API page,
#: besides ``flask_mcp`` itself. A reference to ``flask_mcp.<internal>.Name`` resolves to
#: the first of these (``flask_mcp`` first) that documents ``Name``.
PUBLIC_MODULES = (
    "flask_mcp",
    "flask_mcp.content",
    "flask_mcp.signals",
    "flask_mcp.testing",
    "flask_mcp.auth.jwt_authorizer",
    "flask_mcp.mrtr",
    "flask_mcp.config",
    "flask_mcp.client",
)


def config_rst() -> list[str]:
    """Return the reST lines documenting every configuration key."""
    from flask_mcp.config import KEYS
    from flask_mcp.config import Settings

    types = {field.name: str(field.type) for field in dataclasses.fields(Settings)}
    lines: list[str] = []
    for key in KEYS:
        lines += [
            f".. confval:: {key.name}",
            f"    :type: ``{types[key.name[4:].lower()]}``",
            f"    :default: ``{key.default!r}``",
            "",
            f"    Environment variable: ``FLASK_{key.name}``.",
            "",
        ]
        lines += [f"    {line}" for line in key.doc.splitlines()]
        lines.append("")
    return lines


class ConfigDirective(SphinxDirective):
    """Render the configuration reference from :data:`flask_mcp.config.KEYS`."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        # The generated text is reST. A nested parse would read it with the parser of
        # the page (MyST for a markdown page), so parse it as reST in a document of its
        # own, as MyST's {eval-rst} does, and return its nodes.
        document = self.state.document
        sub = utils.new_document(document["source"], document.settings)
        sub.reporter = document.reporter
        RSTParser().parse("\n".join(config_rst()), sub)
        return list(sub.children)


def resolve_public_alias(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.TextElement
) -> nodes.Node | None:
    """Resolve ``flask_mcp.<internal module>.Name`` to the public entry for ``Name``."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target.startswith("flask_mcp.") or target.count(".") < 2:
        return None
    name = target.rsplit(".", 1)[1]
    domain = env.domains.python_domain
    for module in PUBLIC_MODULES:
        candidate = f"{module}.{name}"
        if candidate != target and candidate in domain.objects:
            node["reftarget"] = candidate
            return domain.resolve_xref(
                env, node["refdoc"], app.builder, node["reftype"], candidate, node, contnode
            )
    return None


def setup(app: Sphinx) -> dict[str, t.Any]:
    app.add_directive("mcp-config", ConfigDirective)
    app.connect("missing-reference", resolve_public_alias)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
