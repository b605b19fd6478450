"""``flask mcp skills``: list and check skill folders with the checks serving them runs."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from click.testing import CliRunner
from flask import Flask
from skill_folders import EXAMPLES
from skill_folders import skill_md
from skill_folders import write

from flask_mcp import MCP
from flask_mcp.cli import cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLASK = str(pathlib.Path(sys.executable).parent / "flask")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["skills", *args])
    return result.exit_code, result.stdout, result.stderr


def test_lists_and_checks_a_folder() -> None:
    code, out, err = run(str(EXAMPLES))
    assert code == 0, out + err
    size = sum(p.stat().st_size for p in (EXAMPLES / "flask-deploy").rglob("*") if p.is_file())
    lines = out.splitlines()
    assert lines[0] == (
        f"  skill://flask-deploy/SKILL.md         3 files, {size} bytes  Deploy this Flask app to "
        "production safely. Use when asked to ship, release or roll back the service."
    )
    assert lines[1].startswith("  skill://ops/incident-triage/SKILL.md  4 files, ")
    assert lines[-1] == "2 skills, all valid."


def test_one_skill_directory_with_a_prefix_as_json() -> None:
    code, out, _ = run(str(EXAMPLES / "ops" / "incident-triage"), "--prefix", "runbooks", "--json")
    assert code == 0
    (entry,) = json.loads(out)["skills"]
    assert entry["uri"] == "skill://runbooks/incident-triage/SKILL.md"
    assert len(entry["resources"]) == 4 and entry["resources"][0]["digest"].startswith("sha256:")


def test_errors_name_the_file_and_the_fix(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": "---\nname: other\n---\n", "fine/SKILL.md": skill_md("fine")})
    code, out, err = run(str(tmp_path))
    assert code == 1
    assert "skill://fine/SKILL.md" not in out  # the folder as a whole is refused, as serving it is
    assert (
        f"error: {tmp_path / 'demo' / 'SKILL.md'}: 'name' is 'other' but the directory is named "
        "'demo': they must be equal (the skill's URI ends with its name); rename the directory to "
        "'other' or set 'name: demo'"
    ) in out
    assert "the frontmatter has no 'description'" in out
    assert err.strip() == "0 skills; 2 errors to fix."


def test_notes_do_not_fail(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo", extra="version: 2\n")})
    code, out, _ = run(str(tmp_path))
    assert code == 0
    assert "note: " in out and "'version' is not in the Agent Skills specification" in out


def test_two_folders_serving_the_same_skill(tmp_path: pathlib.Path) -> None:
    code, out, err = run(str(EXAMPLES), str(EXAMPLES))
    assert code == 1
    assert f"{EXAMPLES}: serves skill://flask-deploy/SKILL.md, which {EXAMPLES} serves" in out


def test_without_a_folder_and_an_app_that_declares_none() -> None:
    app = Flask(__name__)
    MCP(name="x", version="1").init_app(app)
    result = app.test_cli_runner().invoke(cli, ["skills"])
    assert result.exit_code == 2
    assert (
        "The app serves no skills: declare some with mcp.skills_folder('skills'), or name the "
        "folders to check: flask mcp skills PATH..."
    ) in result.output


def test_without_a_folder_the_apps_skills() -> None:
    app = Flask(__name__)
    mcp = MCP(name="x", version="1")
    mcp.skills_folder("../examples/skills", prefix="team")
    mcp.init_app(app)
    result = app.test_cli_runner().invoke(cli, ["skills"])
    assert result.exit_code == 0, result.output
    assert "skill://team/flask-deploy/SKILL.md" in result.output
    assert result.output.splitlines()[-1] == "2 skills, all valid."


def test_the_flask_command() -> None:
    done = subprocess.run(
        [FLASK, "mcp", "skills", "examples/skills"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "2 skills, all valid."
