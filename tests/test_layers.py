"""The package's layers hold, and the public import paths of the docs keep working.

The layers are those of the import-linter contract in setup.cfg, the one layer table:
scripts/import_graph.py reads it, and docs/architecture.md's table is generated from it.
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
import types

import pytest

import flask_mcp

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONTRACT = """
[importlinter:contract:layers]
name = layers
type = layers
containers =
    flask_mcp
exhaustive_ignores =
    extras
layers =
    face : extras.top
    (kernel)
    engine | storage
    leaves
"""


def import_graph() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_graph", ROOT / "scripts" / "import_graph.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def fake_package(tmp_path: pathlib.Path, files: dict[str, str]) -> dict[str, pathlib.Path]:
    """Write modules below ``flask_mcp`` in ``tmp_path``; return them by dotted name."""
    modules = {}
    for relative, text in files.items():
        path = tmp_path / "flask_mcp" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        name = "flask_mcp." + relative.removesuffix(".py").replace("/", ".")
        modules[name.removesuffix(".__init__")] = path
    return modules


def test_no_cycle_and_no_upward_import() -> None:
    """scripts/import_graph.py --check: TYPE_CHECKING imports count too."""
    script = ROOT / "scripts" / "import_graph.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cycles, all kinds (TYPE_CHECKING included): 0" in done.stdout
    assert "upward imports: 0" in done.stdout
    assert "imports between independent siblings: 0" in done.stdout
    assert "docs/architecture.md layer table: current" in done.stdout


def test_the_public_paths_of_the_docs_work() -> None:
    from flask_mcp import mrtr
    from flask_mcp.auth import AuthError
    from flask_mcp.auth import AuthInfo
    from flask_mcp.auth.jwt_authorizer import JWTAuthorizer
    from flask_mcp.server import mrtr as server_mrtr
    from flask_mcp.transport.auth import current_auth
    from flask_mcp.transport.auth import require_scopes

    assert JWTAuthorizer.__module__ == "flask_mcp.auth.jwt_authorizer"
    assert mrtr.elicitation is server_mrtr.elicitation
    assert flask_mcp.current_auth is current_auth
    assert flask_mcp.require_scopes is require_scopes
    assert (AuthError, AuthInfo) == (flask_mcp.AuthError, flask_mcp.AuthInfo)
    for name in flask_mcp.__all__:
        assert getattr(flask_mcp, name) is not None


@pytest.mark.parametrize("name", ["current_auth", "require_scopes", "current_authenticator"])
def test_the_auth_layer_holds_no_transport_name(name: str) -> None:
    """The deprecated flask_mcp.auth.<name> hooks are gone: the names live in the transport."""
    import flask_mcp.auth

    with pytest.raises(AttributeError):
        getattr(flask_mcp.auth, name)
    assert getattr(flask_mcp, name, None) is not None or name == "current_authenticator"


def test_the_jwt_auth_module_is_gone() -> None:
    with pytest.raises(ImportError):
        import flask_mcp.jwt_auth  # noqa: F401


def test_the_contract_is_read_with_new_layers_and_no_code_change(tmp_path: pathlib.Path) -> None:
    """A line in setup.cfg is all a new package needs: placed, checked, documented."""
    graph = import_graph()
    cfg = tmp_path / "setup.cfg"
    cfg.write_text(CONTRACT)
    contract = graph.read_contract(cfg)
    assert [layer.modules for layer in contract.layers] == [
        ("leaves",),
        ("engine", "storage"),
        ("kernel",),
        ("face", "extras.top"),
    ]
    assert contract.place("storage.redis.keys") == (1, 1)  # a module of a package
    assert contract.place("kernel") == (2, 0)
    assert contract.place("extras.top") == (3, 0)
    assert contract.place("extras") is None and contract.place("") is None
    with pytest.raises(SystemExit, match="add it to the layers"):
        contract.place("stray")
    modules = fake_package(
        tmp_path,
        {
            "leaves.py": '"""The bottom: :class:`~flask_mcp.leaves.Leaf` and ``leaf``."""',
            "engine/__init__.py": '"""Runs things."""',
            "engine/run.py": "",
            "storage/__init__.py": '"""Keeps | things."""',
            "face.py": '"""The face."""',
            "extras/top.py": '"""On top."""',
        },
    )
    table = graph.docs_table(contract, modules)
    assert "| L0 | `leaves` | The bottom: `Leaf` and `leaf`. |" in table
    assert "| L1 | `engine/` (`run`) | Runs things. |" in table
    assert "| L1 | `storage/` | Keeps \\| things. |" in table
    assert "kernel" not in table  # an optional layer not built yet
    assert "`engine` and `storage`" in table  # independent siblings


def test_a_breach_of_the_contract_is_found(tmp_path: pathlib.Path) -> None:
    graph = import_graph()
    cfg = tmp_path / "setup.cfg"
    cfg.write_text(CONTRACT)
    contract = graph.read_contract(cfg)
    modules = fake_package(
        tmp_path,
        {
            "leaves.py": "import typing\nif typing.TYPE_CHECKING:\n    from . import face\n",
            "engine/__init__.py": "from ..storage import keep\n",
            "storage/__init__.py": "",
            "storage/keep.py": "def f():\n    from ..leaves import x\n",
            "face.py": "from .engine import run\n",
            "engine/run.py": "",
        },
    )
    edges, _ = graph.scan(modules)
    found = {(e.importer, e.imported, e.kind) for e in edges}
    assert ("flask_mcp.leaves", "flask_mcp.face", "type") in found
    assert ("flask_mcp.storage.keep", "flask_mcp.leaves", "function") in found
    places = {name: contract.place(name[len("flask_mcp.") :]) for name in modules}
    upward = [e for e in edges if places[e.imported][0] > places[e.importer][0]]
    sideways = [
        e
        for e in edges
        if places[e.imported][0] == places[e.importer][0]
        and places[e.imported][1] != places[e.importer][1]
    ]
    assert [(e.importer, e.imported) for e in upward] == [("flask_mcp.leaves", "flask_mcp.face")]
    assert [(e.importer, e.imported) for e in sideways] == [
        ("flask_mcp.engine", "flask_mcp.storage.keep")
    ]


def test_a_stale_docs_table_fails_the_check(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = import_graph()
    page = tmp_path / "architecture.md"
    monkeypatch.setattr(graph, "ARCHITECTURE", page)
    page.write_text("# A\n\nno table\n")
    assert "no generated layer table" in graph.stale_docs("table")
    page.write_text(f"# A\n\n{graph.BEGIN}\nold\n{graph.END}\ntail\n")
    table = f"{graph.BEGIN}\nnew\n{graph.END}"
    assert "is not the contract's" in graph.stale_docs(table)
    graph.write_docs(table)
    assert graph.stale_docs(table) is None
    assert page.read_text() == f"# A\n\n{table}\ntail\n"
