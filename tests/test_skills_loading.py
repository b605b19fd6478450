"""Loading skills from disk: folders, nesting, limits, links, each registration error."""

from __future__ import annotations

import hashlib
import os
import pathlib
import typing as t

import pytest
from skill_folders import EXAMPLES
from skill_folders import skill_md
from skill_folders import write

from flask_mcp.extensions.skills import MAX_BYTES
from flask_mcp.extensions.skills import MAX_FILES
from flask_mcp.extensions.skills import SkillSource
from flask_mcp.extensions.skills import load


def folder(root: pathlib.Path, prefix: str = "") -> SkillSource:
    return SkillSource("folder", path=root, prefix=prefix)


def errors(source: SkillSource) -> list[str]:
    skills, problems = load(source)
    found = [str(problem) for problem in problems if problem.error]
    assert found and skills == []
    return found


def test_the_example_folder_loads_with_digests_of_the_bytes() -> None:
    skills, problems = load(folder(EXAMPLES))
    assert problems == []
    assert [skill.path for skill in skills] == ["flask-deploy", "ops/incident-triage"]
    deploy, triage = skills
    assert deploy.uri == "skill://flask-deploy/SKILL.md"
    assert triage.uri == "skill://ops/incident-triage/SKILL.md"
    assert triage.name == "incident-triage"
    for skill in skills:
        assert skill.files is not None and skill.root is not None
        assert skill.files[0].path == "SKILL.md"  # SKILL.md first, then the others by path
        paths = [file.path for file in skill.files[1:]]
        assert paths == sorted(paths)
        for file in skill.files:
            data = (skill.root / file.path).read_bytes()
            assert file.size == len(data)
            assert file.digest == "sha256:" + hashlib.sha256(data).hexdigest()
            assert file.uri == f"{skill.directory_uri}/{file.path}"
    types = {file.path: file.media_type for file in triage.files or ()}
    assert types["SKILL.md"] == "text/markdown"
    assert types["assets/dashboard.png"] == "image/png"
    assert deploy.frontmatter == {
        "name": "flask-deploy",
        "description": (
            "Deploy this Flask app to production safely. Use when asked to ship, release or "
            "roll back the service."
        ),
        "license": "BSD-3-Clause",
        "metadata": {"owner": "platform-team", "version": "1.2"},
    }


def test_nested_skills_are_published_flat_and_their_files_belong_to_the_outer_one(
    tmp_path: pathlib.Path,
) -> None:
    write(
        tmp_path,
        {
            "outer/SKILL.md": skill_md("outer"),
            "outer/notes.md": "notes",
            "outer/inner/SKILL.md": skill_md("inner"),
            "outer/inner/data.csv": "a,b\n",
            "team/billing/refunds/SKILL.md": skill_md("refunds"),
        },
    )
    skills, problems = load(folder(tmp_path, prefix="acme"))
    assert problems == []
    by_path = {skill.path: skill for skill in skills}
    assert set(by_path) == {"acme/outer", "acme/outer/inner", "acme/team/billing/refunds"}
    outer = by_path["acme/outer"]
    inner = by_path["acme/outer/inner"]
    assert [file.path for file in outer.files or ()] == [
        "SKILL.md",
        "inner/SKILL.md",
        "inner/data.csv",
        "notes.md",
    ]
    assert [file.uri for file in inner.files or ()] == [
        "skill://acme/outer/inner/SKILL.md",
        "skill://acme/outer/inner/data.csv",
    ]
    shared = {file.uri: file.digest for file in outer.files or ()}
    for file in inner.files or ():
        assert shared[file.uri] == file.digest  # the same file, the same entry


def test_one_skill_from_its_directory(tmp_path: pathlib.Path) -> None:
    write(tmp_path / "deploy", {"SKILL.md": skill_md("deploy"), "sub/SKILL.md": skill_md("sub")})
    skills, problems = load(SkillSource("skill", path=tmp_path / "deploy", prefix="runbooks"))
    assert problems == []
    assert [skill.uri for skill in skills] == ["skill://runbooks/deploy/SKILL.md"]
    assert [file.path for file in skills[0].files or ()] == ["SKILL.md", "sub/SKILL.md"]


def test_hidden_entries_and_pycache_are_not_served(tmp_path: pathlib.Path) -> None:
    write(
        tmp_path,
        {
            "demo/SKILL.md": skill_md("demo"),
            "demo/.env": "SECRET=1",
            "demo/.git/config": "x",
            "demo/scripts/__pycache__/x.pyc": b"\x00",
            "demo/scripts/run.py": "print(1)\n",
        },
    )
    skills, _ = load(folder(tmp_path))
    assert [file.path for file in skills[0].files or ()] == ["SKILL.md", "scripts/run.py"]


def test_a_file_name_a_uri_cannot_hold_as_is_is_percent_encoded(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "demo/my notes #1.md": "n"})
    skills, _ = load(folder(tmp_path))
    assert skills[0].files is not None
    assert skills[0].files[1].uri == "skill://demo/my%20notes%20%231.md"
    assert skills[0].files[1].path == "my notes #1.md"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"demo/SKILL.md": skill_md("other")},
            "'name' is 'other' but the directory is named 'demo'",
        ),
        ({"demo/SKILL.md": "---\ndescription: d\n---\n"}, "has no 'name': add 'name: demo'"),
        ({"demo/SKILL.md": "---\nname: demo\n---\n"}, "the frontmatter has no 'description'"),
        ({"Demo/SKILL.md": skill_md("Demo")}, "'name' 'Demo' must be lowercase"),
        ({"demo/SKILL.md": "# Demo\n"}, "does not begin with YAML frontmatter"),
        ({"demo/skill.md": skill_md("demo")}, "is named 'skill.md': name it 'SKILL.md' exactly"),
        ({"SKILL.md": skill_md("x")}, "is at the root of the skills folder"),
    ],
)
def test_registration_errors_name_the_file_and_the_fix(
    tmp_path: pathlib.Path, files: dict[str, str], expected: str
) -> None:
    write(tmp_path, files)
    found = errors(folder(tmp_path))
    assert any(expected in problem for problem in found), found
    assert all(problem.startswith(str(tmp_path)) for problem in found)


def test_every_problem_of_a_folder_is_reported_at_once(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"a/SKILL.md": skill_md("b"), "c/SKILL.md": "---\nname: c\n---\n"})
    found = errors(folder(tmp_path))
    assert len(found) == 2
    assert str(tmp_path / "a" / "SKILL.md") in found[0]
    assert str(tmp_path / "c" / "SKILL.md") in found[1]


def test_a_missing_folder(tmp_path: pathlib.Path) -> None:
    found = errors(folder(tmp_path / "nope"))
    assert found == [
        f"{tmp_path / 'nope'}: does not exist: create it, or pass the path of a folder holding "
        "one directory per skill"
    ]
    write(tmp_path, {"file": "x"})
    assert "is not a directory" in errors(folder(tmp_path / "file"))[0]


def test_a_skill_directory_without_skill_md(tmp_path: pathlib.Path) -> None:
    write(tmp_path / "demo", {"README.md": "x"})
    found = errors(SkillSource("skill", path=tmp_path / "demo"))
    assert found == [
        f"{tmp_path / 'demo'}: has no SKILL.md: a skill is a directory with a SKILL.md at its "
        "root (YAML frontmatter with 'name' and 'description', then the instructions)"
    ]


def test_an_empty_folder_is_a_note(tmp_path: pathlib.Path) -> None:
    skills, problems = load(folder(tmp_path))
    assert skills == []
    assert [(p.error, p.message) for p in problems] == [
        (False, "holds no skill (no <name>/SKILL.md below it)")
    ]


def test_the_file_limit(tmp_path: pathlib.Path) -> None:
    files: dict[str, str | bytes] = {"demo/SKILL.md": skill_md("demo")}
    files.update({f"demo/f/{n:03}.txt": "" for n in range(MAX_FILES - 1)})
    write(tmp_path, files)
    skills, problems = load(folder(tmp_path))
    assert problems == [] and len(skills[0].files or ()) == MAX_FILES
    write(tmp_path, {"demo/one-more.txt": ""})
    found = errors(folder(tmp_path))
    assert found == [
        f"{tmp_path / 'demo'}: holds 513 files (nested skills included); a skill may hold at "
        "most 512, the most every host accepts: split it into several skills"
    ]


def test_the_nested_files_count_toward_the_outer_skills_limit(tmp_path: pathlib.Path) -> None:
    files: dict[str, str | bytes] = {"outer/SKILL.md": skill_md("outer")}
    files["outer/inner/SKILL.md"] = skill_md("inner")
    files.update({f"outer/inner/{n:03}.txt": "" for n in range(MAX_FILES - 1)})
    write(tmp_path, files)
    found = errors(folder(tmp_path))
    assert len(found) == 1 and found[0].startswith(f"{tmp_path / 'outer'}: holds 513 files")


def test_the_size_limit(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo")})
    big = tmp_path / "demo" / "big.bin"
    with open(big, "wb") as file:  # sparse: the limit is checked from sizes, before reading
        file.truncate(MAX_BYTES - (tmp_path / "demo" / "SKILL.md").stat().st_size)
    skills, problems = load(folder(tmp_path))
    assert problems == [] and skills[0].size == MAX_BYTES
    with open(big, "ab") as file:
        file.write(b"x")
    found = errors(folder(tmp_path))
    assert found == [
        f"{tmp_path / 'demo'}: holds {MAX_BYTES + 1} bytes (nested skills included); a skill "
        "may hold at most 16777216 (16 MiB), the most every host accepts: move large files out "
        "of it"
    ]


def test_a_link_inside_the_folder_is_served(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "shared/LICENSE.txt": "BSD"})
    os.symlink(tmp_path / "shared" / "LICENSE.txt", tmp_path / "demo" / "LICENSE.txt")
    skills, problems = load(folder(tmp_path))
    assert problems == []
    license_file = (skills[0].files or ())[1]
    assert license_file.path == "LICENSE.txt" and license_file.size == 3


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            lambda root, outside: os.symlink(outside / "secret.txt", root / "demo" / "s.txt"),
            "is a symbolic link to {outside}/secret.txt, outside {root}: a skill may only serve "
            "files inside its folder; copy the file in instead",
        ),
        (
            lambda root, outside: os.symlink(root / "other", root / "demo" / "d"),
            "is a symbolic link to a directory, which is not followed: copy the directory in",
        ),
        (
            lambda root, outside: os.symlink(root / "gone", root / "demo" / "g"),
            "is a broken symbolic link: remove it or fix its target",
        ),
        (
            lambda root, outside: os.symlink("../../outside/secret.txt", root / "demo" / "u"),
            "outside {root}",
        ),
    ],
)
def test_nothing_leaves_the_folder(
    tmp_path: pathlib.Path, make: t.Callable[..., None], expected: str
) -> None:
    root, outside = tmp_path / "skills", tmp_path / "outside"
    write(root, {"demo/SKILL.md": skill_md("demo"), "other/x.txt": "x"})
    write(outside, {"secret.txt": "secret"})
    make(root, outside)
    found = errors(folder(root))
    text = expected.format(root=root, outside=outside)
    assert any(text in problem for problem in found), found


def test_a_fifo_is_refused(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo")})
    os.mkfifo(tmp_path / "demo" / "pipe")
    assert "is not a regular file" in errors(folder(tmp_path))[0]


@pytest.mark.parametrize("prefix", ["../up", "a//b", "a/./b", "/abs"])
def test_a_prefix_cannot_point_outside(tmp_path: pathlib.Path, prefix: str) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo")})
    found = errors(SkillSource("folder", path=tmp_path, prefix=prefix))
    assert "prefix" in found[0]


@pytest.mark.parametrize(
    ("skill_path", "expected"),
    [
        ("", "the skill path is empty"),
        ("reports/../x", "has an empty, '.' or '..' segment"),
        ("reports/Daily", "'name' 'Daily' must be lowercase: the skill path's last segment"),
    ],
)
def test_a_dynamic_skill_path_is_checked(skill_path: str, expected: str) -> None:
    source = SkillSource("dynamic", skill_path=skill_path, producer=dict)
    skills, problems = load(source)
    assert skills == [] and any(expected in str(problem) for problem in problems), problems


def test_a_dynamic_skill_needs_a_function() -> None:
    source = SkillSource("dynamic", skill_path="daily", producer=None)
    assert "needs a function" in str(load(source)[1][0])


def test_with_prefix_puts_a_blueprint_segment_first(tmp_path: pathlib.Path) -> None:
    source = SkillSource("folder", path=tmp_path, prefix="team")
    assert source.with_prefix("billing").prefix == "billing/team"
    dynamic = SkillSource("dynamic", skill_path="reports/daily", producer=dict)
    assert dynamic.with_prefix("/billing/").skill_path == "billing/reports/daily"
