"""Check the built sdist and wheel in ``dist/`` before a release (run by scripts/test).

``python -m build`` then ``twine check`` say the metadata renders; this says the files
are there: the sdist carries the license, the changelog, the docs sources, the examples,
the deployment files and the tests (MANIFEST.in), and the wheel carries the package, its
``py.typed`` and the license, and no tests or docs.

Usage: ``python scripts/check_dist.py [DIST_DIR]``. Exit status 1 with the missing or
unexpected files listed.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path

SDIST_NEEDS = [
    "LICENSE.txt",
    "CHANGES.rst",
    "README.md",
    "setup.cfg",
    "pyproject.toml",
    "docs/conf.py",
    "docs/index.md",
    "docs/api.rst",
    "docs/_ext/flask_mcp_docs.py",
    "examples/quickstart.py",
    "examples/apps.py",
    "examples/templates/todo_board.html",
    "examples/skills_server.py",
    "examples/skills/ops/incident-triage/assets/dashboard.png",
    "contrib/nginx.conf",
    "contrib/gunicorn.conf.py",
    "tests/conftest.py",
    "tests/harness.py",
    "tests/conformance/package.json",
    "tests/apps_host/package-lock.json",
    "scripts/test",
    "flask_mcp/__init__.py",
    "flask_mcp/py.typed",
    "flask_mcp/extensions/apps/static/mcp-app.js",
    "flask_mcp/backends/redis/lua/library.lua",
    "flask_mcp/backends/redis/lua/session/emit.lua",
    "flask_mcp/backends/redis/lua/shared/beat.lua",
    "flask_mcp/explorer/static/explorer.js",
    "flask_mcp/contrib/oauth_server/templates/mcp_oauth/consent.html",
]
SDIST_REFUSES = ("node_modules/", "docs/_build/", "__pycache__/", ".venv/")
WHEEL_NEEDS = [
    "flask_mcp/__init__.py",
    "flask_mcp/py.typed",
    "flask_mcp/server/dispatcher.py",
    "flask_mcp/extensions/apps/static/mcp-app.js",
    # the Server Card schema, read as package data when a card is checked
    "flask_mcp/extensions/schemas/server-card.schema.json",
    # the Redis backend's Lua scripts, read as package data
    "flask_mcp/backends/redis/lua/library.lua",
    "flask_mcp/backends/redis/lua/session.lua",
    "flask_mcp/backends/redis/lua/session/emit.lua",
    "flask_mcp/backends/redis/lua/shared/beat.lua",
    "flask_mcp/explorer/templates/mcp_explorer/page.html",
    "flask_mcp/explorer/templates/mcp_explorer/sandbox.html",
    "flask_mcp/explorer/static/explorer.js",
    "flask_mcp/explorer/static/explorer.css",
    "flask_mcp/explorer/static/sandbox.js",
    "flask_mcp/explorer/static/sandbox.css",
    "flask_mcp/contrib/oauth_server/templates/mcp_oauth/consent.html",
    "flask_mcp/contrib/oauth_server/templates/mcp_oauth/error.html",
]
WHEEL_REFUSES = ("tests/", "docs/", "examples/", "benchmarks/")


def check(dist: Path) -> list[str]:
    """Return the problems found in the one sdist and one wheel of ``dist``."""
    sdists = sorted(dist.glob("*.tar.gz"))
    wheels = sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        return [f"expected one sdist and one wheel in {dist}, found {sdists + wheels}"]
    problems = []
    with tarfile.open(sdists[0]) as tar:
        # every member is under the "<name>-<version>/" directory
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    problems += [f"sdist lacks {name}" for name in SDIST_NEEDS if name not in names]
    problems += [f"sdist carries {n}" for n in sorted(names) if any(r in n for r in SDIST_REFUSES)]
    with zipfile.ZipFile(wheels[0]) as whl:
        names = set(whl.namelist())
    problems += [f"wheel lacks {name}" for name in WHEEL_NEEDS if name not in names]
    if not any(n.endswith(".dist-info/licenses/LICENSE.txt") for n in names):
        problems.append("wheel lacks the license (.dist-info/licenses/LICENSE.txt)")
    problems += [f"wheel carries {n}" for n in sorted(names) if n.startswith(WHEEL_REFUSES)]
    return problems


def main() -> int:
    dist = Path(sys.argv[1] if len(sys.argv) > 1 else "dist")
    problems = check(dist)
    for problem in problems:
        print(f"check_dist: {problem}", file=sys.stderr)
    if not problems:
        print(f"check_dist: {dist} holds a complete sdist and wheel")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
