"""The code examples of the documentation run, so the docs cannot rot.

Every ```` ```python ```` block of a page in ``docs/`` runs, in the order of the page, in
one namespace per page (a later block may use what an earlier one defined), and every
```` ```pycon ```` block is a doctest checked in that namespace: its outputs must match.
What a fragment needs but the reader does not (an ``app``, a stand-in for the reader's
database) goes in a hidden setup block, an HTML comment that runs in its place::

    <!-- example: setup
    NOTES = {"todo": "buy milk"}
    -->

A block that cannot run here (a file of another project) is preceded by the comment
``<!-- example: skip -->``; this test counts those so that skipping stays the exception.
A page's ``pytest`` blocks (functions named ``test_*``) are collected and run too, with
the fixtures they name from :func:`fixtures_for`.
"""

from __future__ import annotations

import doctest
import inspect
import re
import typing as t
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(
    r"(?P<skip><!-- example: skip -->\n)?^```(?P<info>[^\n`]*)\n(?P<code>.*?)^```$"
    r"|^<!-- example: setup\n(?P<setup>.*?)^-->$",
    re.MULTILINE | re.DOTALL,
)
#: How many blocks may be skipped over the whole site (raise it on purpose only).
MAX_SKIPPED = 12


@dataclass
class Block:
    page: str
    line: int
    kind: str
    code: str
    skipped: bool


def blocks(path: Path) -> list[Block]:
    """Return the python and pycon blocks of a page, in order."""
    text = path.read_text()
    found = []
    for match in FENCE.finditer(text):
        if match["setup"] is not None:
            line = text.count("\n", 0, match.start("setup")) + 1
            found.append(Block(path.name, line, "python", match["setup"], False))
            continue
        kind = match["info"].strip()
        if kind not in ("python", "pycon"):
            continue
        line = text.count("\n", 0, match.start("code")) + 1
        found.append(Block(path.name, line, kind, match["code"], bool(match["skip"])))
    return found


PAGES = sorted(p for p in DOCS.glob("*.md") if any(not b.skipped for b in blocks(p)))


def run_page(path: Path, tmp_path: Path) -> dict[str, t.Any]:
    """Run the blocks of ``path`` in one namespace and return it."""
    namespace: dict[str, t.Any] = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
    for block in blocks(path):
        if block.skipped:
            continue
        where = f"{path.relative_to(DOCS.parent)}:{block.line}"
        if block.kind == "python":
            # Not this module's postponed annotations: a page's dataclass needs real ones.
            source = "\n" * (block.line - 1) + block.code
            code = compile(source, str(path), "exec", dont_inherit=True)
            exec(code, namespace)
            continue
        parser = doctest.DocTestParser()
        test = parser.get_doctest(block.code, namespace, where, str(path), block.line - 1)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        out: list[str] = []
        runner.run(test, out=out.append, clear_globs=False)
        namespace.update(test.globs)  # DocTest works on a copy of the namespace
        assert runner.failures == 0, f"doctest failed at {where}:\n" + "".join(out)
    return namespace


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_page_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = run_page(path, tmp_path)
    tests = {
        name: fn
        for name, fn in namespace.items()
        if name.startswith("test_") and inspect.isfunction(fn)
    }
    for name, fn in tests.items():
        fixtures = fixtures_for(namespace)
        missing = [p for p in inspect.signature(fn).parameters if p not in fixtures]
        assert not missing, f"{path.name}: {name} needs fixtures this test lacks: {missing}"
        fn(**{p: fixtures[p]() for p in inspect.signature(fn).parameters})


def fixtures_for(namespace: dict[str, t.Any]) -> dict[str, t.Callable[[], t.Any]]:
    """The fixtures a page's test functions may name, built from the page's ``app``."""
    from flask_mcp.testing import MCPTestClient

    return {
        "app": lambda: namespace["app"],
        "mcp_client": lambda: MCPTestClient(namespace["app"]),
    }


def test_few_blocks_are_skipped() -> None:
    skipped = [b for p in DOCS.glob("*.md") for b in blocks(p) if b.skipped]
    assert len(skipped) <= MAX_SKIPPED, [f"{b.page}:{b.line}" for b in skipped]


def test_pages_have_examples() -> None:
    assert {"quickstart.md", "tools.md", "context.md", "testing.md"} <= {p.name for p in PAGES}
