"""Sphinx configuration of the Flask-MCP documentation.

Built by ``scripts/test`` with ``python -m sphinx -W --keep-going -b dirhtml docs
docs/_build/html``: every warning is an error. Pages are MyST markdown; a new page is one
line in the toctree of ``index.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pallets_sphinx_themes import ProjectLink
from pallets_sphinx_themes import get_version

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

# Project --------------------------------------------------------------

project = "Flask-MCP"
copyright = "2026 Flask-MCP contributors"
author = "Flask-MCP contributors"
release, version = get_version("Flask-MCP")

# General --------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "myst_parser",
    "pallets_sphinx_themes",
    "flask_mcp_docs",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# Every reference to the project's public API must resolve: a name of ``flask_mcp``
# or of one of its public modules (flask_mcp_docs.PUBLIC_MODULES; a reference through
# the internal module that defines a public name resolves to the public entry). Not
# checked: the internal layers (a docstring may name a module of server/, runtime/...),
# type variables, and other projects (Flask, Werkzeug, the standard library), for which
# an offline build has no intersphinx inventory.
nitpicky = True
_internal = r"flask_mcp\.(server|runtime|transport|protocol|schema|backends|auth|convert|_\w+)"
nitpick_ignore_regex = [
    (r"py:.*", r"(?!flask_mcp\b).*"),
    (r"py:.*", _internal + r"(\..*)?"),
    (r"py:.*", r"flask_mcp\.pytest_plugin"),
    (r"py:class", r"flask_mcp(\.\w+)*\.[A-Z]"),
]

myst_enable_extensions = ["colon_fence", "deflist", "fieldlist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_preserve_defaults = True

# HTML -----------------------------------------------------------------

html_theme = "flask"
html_theme_options = {"index_sidebar_logo": False}
html_context = {
    "project_links": [
        ProjectLink("PyPI Releases", "https://pypi.org/project/Flask-MCP/"),
        ProjectLink("Source Code", "https://github.com/flask-mcp/flask-mcp/"),
        ProjectLink("Issue Tracker", "https://github.com/flask-mcp/flask-mcp/issues/"),
        ProjectLink("MCP Specification", "https://modelcontextprotocol.io/specification/"),
    ]
}
html_sidebars = {
    "index": ["project.html", "localtoc.html", "searchbox.html"],
    "**": ["localtoc.html", "relations.html", "searchbox.html"],
}
singlehtml_sidebars = {"index": ["project.html", "localtoc.html"]}
html_title = f"Flask-MCP Documentation ({version})"
html_show_sourcelink = False
