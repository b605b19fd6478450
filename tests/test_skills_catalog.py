"""The catalog's results: skills/list pages, skills/get, directory reads, reads, changes on disk."""

from __future__ import annotations

import base64
import hashlib
import pathlib
import shutil

import pytest
from skill_folders import EXAMPLES
from skill_folders import skill_md
from skill_folders import touch
from skill_folders import write

from flask_mcp.errors import INVALID_PARAMS
from flask_mcp.errors import MCPError
from flask_mcp.extensions.skills import DynamicSkillError
from flask_mcp.extensions.skills import Problem
from flask_mcp.extensions.skills import SkillCatalog
from flask_mcp.extensions.skills import SkillError
from flask_mcp.extensions.skills import SkillSource
from flask_mcp.extensions.skills.catalog import Change
from flask_mcp.extensions.skills.catalog import StaleFile


def catalog_of(*sources: SkillSource) -> SkillCatalog:
    catalog = SkillCatalog()
    for source in sources:
        catalog.add(source)
    return catalog


def folder(path: pathlib.Path, **options: object) -> SkillSource:
    return SkillSource("folder", path=path, **options)  # type: ignore[arg-type]


def five_skills(root: pathlib.Path) -> pathlib.Path:
    return write(root, {f"s{n}/SKILL.md": skill_md(f"s{n}") for n in range(5)})


def test_pages_of_skills_list_keep_every_entry_whole(tmp_path: pathlib.Path) -> None:
    catalog = catalog_of(folder(five_skills(tmp_path)))
    seen, cursor, pages = [], None, 0
    while True:
        params = {} if cursor is None else {"cursor": cursor}
        result = catalog.list_result(params, page_size=2)
        pages += 1
        for entry in result["skills"]:
            assert entry["resources"][0]["uri"] == entry["uri"]  # never split across pages
            seen.append(entry["frontmatter"]["name"])
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert pages == 3 and seen == [f"s{n}" for n in range(5)]


@pytest.mark.parametrize("cursor", ["nope", 3, "bzo5OQ"])
def test_a_bad_cursor_is_invalid_params(tmp_path: pathlib.Path, cursor: object) -> None:
    catalog = catalog_of(folder(five_skills(tmp_path)))
    with pytest.raises(MCPError) as caught:
        catalog.list_result({"cursor": cursor}, page_size=2)
    assert caught.value.code == INVALID_PARAMS


def test_an_unlisted_skill_is_served_but_not_listed(tmp_path: pathlib.Path) -> None:
    write(tmp_path / "public", {"open/SKILL.md": skill_md("open")})
    write(tmp_path / "private", {"hidden/SKILL.md": skill_md("hidden")})
    catalog = catalog_of(
        folder(tmp_path / "public"), folder(tmp_path / "private", prefix="internal", listed=False)
    )
    listed = [entry["uri"] for entry in catalog.list_result({}, 100)["skills"]]
    assert listed == ["skill://open/SKILL.md"]
    got = catalog.get_result({"uri": "skill://internal/hidden/SKILL.md"})["skill"]
    assert got["frontmatter"]["name"] == "hidden"
    assert not catalog.files["skill://internal/hidden/SKILL.md"].listed
    content, kind = catalog.read("skill://internal/hidden/SKILL.md")  # type: ignore[misc]
    assert kind == "text/markdown" and content == skill_md("hidden")


def test_skills_get_returns_the_same_entry_as_the_listing() -> None:
    catalog = catalog_of(folder(EXAMPLES))
    for entry in catalog.list_result({}, 100)["skills"]:
        assert catalog.get_result({"uri": entry["uri"]}) == {"skill": entry}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "Invalid params: 'uri' must be a non-empty string."),
        ({"uri": 3}, "Invalid params: 'uri' must be a non-empty string."),
        ({"uri": "skill://nope/SKILL.md"}, "No skill is served at skill://nope/SKILL.md"),
        (
            {"uri": "skill://flask-deploy"},
            "No skill is served at skill://flask-deploy; a skill is named by the URI of its "
            "SKILL.md: skill://flask-deploy/SKILL.md",
        ),
    ],
)
def test_skills_get_errors(params: dict, message: str) -> None:
    catalog = catalog_of(folder(EXAMPLES))
    with pytest.raises(MCPError) as caught:
        catalog.get_result(params)
    assert caught.value.code == INVALID_PARAMS and caught.value.message == message


def test_directory_reads_list_direct_children() -> None:
    catalog = catalog_of(folder(EXAMPLES))
    assert catalog.directory_result({"uri": "skill://ops"}, 100) == {
        "resources": [
            {
                "uri": "skill://ops/incident-triage",
                "name": "incident-triage",
                "mimeType": "inode/directory",
            }
        ]
    }
    root = catalog.directory_result({"uri": "skill://flask-deploy"}, 100)["resources"]
    assert [(item["name"], item["mimeType"]) for item in root] == [
        ("SKILL.md", "text/markdown"),
        ("references", "inode/directory"),
        ("scripts", "inode/directory"),
    ]
    assert root[0]["size"] == (EXAMPLES / "flask-deploy" / "SKILL.md").stat().st_size
    scripts = catalog.directory_result({"uri": "skill://flask-deploy/scripts"}, 100)
    assert scripts["resources"][0]["uri"] == "skill://flask-deploy/scripts/smoke_test.py"
    assert scripts["resources"][0]["mimeType"] == "text/x-python"


def test_directory_names_are_not_percent_encoded(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"Team X/demo/SKILL.md": skill_md("demo"), "Team X/demo/ü/a b.md": "x"})
    catalog = catalog_of(folder(tmp_path))
    assert catalog.directory_result({"uri": "skill://Team%20X"}, 100)["resources"] == [
        {"uri": "skill://Team%20X/demo", "name": "demo", "mimeType": "inode/directory"}
    ]
    root = catalog.directory_result({"uri": "skill://Team%20X/demo"}, 100)["resources"]
    assert [(item["uri"], item["name"]) for item in root] == [
        ("skill://Team%20X/demo/%C3%BC", "ü"),
        ("skill://Team%20X/demo/SKILL.md", "SKILL.md"),
    ]
    below = catalog.directory_result({"uri": "skill://Team%20X/demo/%C3%BC"}, 100)
    assert below["resources"][0]["name"] == "a b.md"


def test_directory_reads_are_paginated(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo")})
    write(tmp_path, {f"demo/t/{n}.md": str(n) for n in range(5)})
    catalog = catalog_of(folder(tmp_path))
    first = catalog.directory_result({"uri": "skill://demo/t"}, 3)
    second = catalog.directory_result({"uri": "skill://demo/t", "cursor": first["nextCursor"]}, 3)
    names = [item["name"] for item in first["resources"] + second["resources"]]
    assert names == [f"{n}.md" for n in range(5)] and "nextCursor" not in second


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        (
            "skill://flask-deploy/SKILL.md",
            "skill://flask-deploy/SKILL.md is not a directory resource",
        ),
        ("skill://nowhere", "No directory resource at skill://nowhere"),
        ("skill://flask-deploy/", "No directory resource at skill://flask-deploy/"),
    ],
)
def test_directory_read_errors(uri: str, message: str) -> None:
    catalog = catalog_of(folder(EXAMPLES))
    with pytest.raises(MCPError) as caught:
        catalog.directory_result({"uri": uri}, 100)
    assert caught.value.code == INVALID_PARAMS and caught.value.message == message


def test_reads_give_text_or_a_blob_of_the_manifests_bytes(tmp_path: pathlib.Path) -> None:
    write(
        tmp_path,
        {
            "demo/SKILL.md": skill_md("demo"),
            "demo/bom.txt": "\ufeffwith a BOM\r\nand CRLF\r\n",
            "demo/LICENSE": "no extension, text",
            "demo/blob": b"\x00\x01\x02binary",
            "demo/latin1.txt": "caf\xe9".encode("latin-1"),
        },
    )
    catalog = catalog_of(folder(tmp_path))
    expected = {
        "bom.txt": ("text/plain", str),
        "LICENSE": ("text/plain", str),
        "blob": ("application/octet-stream", bytes),
        "latin1.txt": ("text/plain", bytes),  # a text type, but not UTF-8: a blob of its bytes
    }
    for name, (kind, python_type) in expected.items():
        uri = f"skill://demo/{name}"
        content, media_type = catalog.read(uri)  # type: ignore[misc]
        assert media_type == kind and isinstance(content, python_type)
        raw = content.encode() if isinstance(content, str) else content
        published = catalog.files[uri].file
        assert published.size == len(raw)
        assert published.digest == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert catalog.read("skill://demo/missing") is None


def test_two_sources_may_not_serve_the_same_skill(tmp_path: pathlib.Path) -> None:
    write(tmp_path / "a", {"demo/SKILL.md": skill_md("demo")})
    write(tmp_path / "b", {"demo/SKILL.md": skill_md("demo")})
    catalog = catalog_of(folder(tmp_path / "a"))
    with pytest.raises(SkillError) as caught:
        catalog.add(folder(tmp_path / "b"))
    assert str(caught.value) == (
        f"Cannot serve the skill: {tmp_path / 'b'}: serves skill://demo/SKILL.md, which "
        f"{tmp_path / 'a'} serves already: give one of them another prefix"
    )
    assert len(catalog.skills) == 1  # nothing of the refused source is served
    catalog.add(folder(tmp_path / "b", prefix="b"))
    assert len(catalog.skills) == 2
    # The same clash arising on disk: the skill that comes is not served, the rest is.
    write(tmp_path / "c", {"b/SKILL.md": skill_md("b")})
    catalog = catalog_of(folder(tmp_path / "a"), folder(tmp_path / "c"))
    write(tmp_path / "a", {"b/SKILL.md": skill_md("b"), "demo/more.md": "more"})
    touch(tmp_path / "c" / "b" / "SKILL.md", skill_md("b", description="New."))
    change, problems = catalog.refresh()
    assert change.added == ("skill://demo/more.md",)
    assert change.modified == ("skill://b/SKILL.md",)
    assert [str(problem) for problem in problems] == [
        f"{tmp_path / 'a'}: serves skill://b/SKILL.md, which {tmp_path / 'c'} serves "
        "already: give one of them another prefix"
    ]
    served = catalog.skill("skill://b/SKILL.md")
    assert served is not None and served.frontmatter["description"] == "New."  # type: ignore[index]
    assert catalog.refresh() == (Change(), [])  # told once, until the next change
    shutil.rmtree(tmp_path / "c" / "b")  # the clash is gone: a's skill comes
    change, problems = catalog.refresh()
    served = catalog.skill("skill://b/SKILL.md")
    assert not any(problem.error for problem in problems)  # a note: c holds no skill
    assert served is not None and served.root == tmp_path / "a" / "b"


def test_names_shared_by_two_skills_are_a_note(tmp_path: pathlib.Path) -> None:
    write(
        tmp_path,
        {"a/refunds/SKILL.md": skill_md("refunds"), "b/refunds/SKILL.md": skill_md("refunds")},
    )
    notes = SkillCatalog().add(folder(tmp_path))
    assert [note.error for note in notes] == [False, False]
    assert "has the same name as skill://b/refunds/SKILL.md" in notes[0].message


def report(date: str) -> dict[str, str | bytes]:
    return {
        "SKILL.md": skill_md("daily", extra=f"metadata:\n  date: '{date}'\n"),
        "data/today.csv": f"date\n{date}\n",
        "data/chart.png": b"\x89PNG\r\n\x1a\n\x00",
    }


def test_a_dynamic_skill(tmp_path: pathlib.Path) -> None:
    day = {"date": "2026-01-01"}
    source = SkillSource(
        "dynamic", skill_path="reports/daily", producer=lambda: report(day["date"])
    )
    catalog = catalog_of(source)
    entry = catalog.list_result({}, 100)["skills"][0]
    assert entry["resources"] == "dynamic"
    assert entry["uri"] == "skill://reports/daily/SKILL.md"
    assert entry["frontmatter"]["metadata"] == {"date": "2026-01-01"}
    day["date"] = "2026-01-02"
    assert catalog.get_result({"uri": entry["uri"]})["skill"]["frontmatter"]["metadata"] == {
        "date": "2026-01-02"
    }
    assert catalog.read("skill://reports/daily/data/today.csv") == (
        "date\n2026-01-02\n",
        "text/csv",
    )
    assert catalog.read("skill://reports/daily/data/chart.png")[1] == "image/png"  # type: ignore[index]
    assert catalog.read("skill://reports/daily/nope") is None
    assert catalog.directory_result({"uri": "skill://reports"}, 100)["resources"] == [
        {"uri": "skill://reports/daily", "name": "daily", "mimeType": "inode/directory"}
    ]
    root = catalog.directory_result({"uri": "skill://reports/daily"}, 100)["resources"]
    assert [(item["name"], item["mimeType"]) for item in root] == [
        ("SKILL.md", "text/markdown"),
        ("data", "inode/directory"),
    ]
    data = catalog.directory_result({"uri": "skill://reports/daily/data"}, 100)["resources"]
    assert [item["name"] for item in data] == ["chart.png", "today.csv"]
    with pytest.raises(MCPError, match="is not a directory resource"):
        catalog.directory_result({"uri": "skill://reports/daily/data/today.csv"}, 100)


@pytest.mark.parametrize(
    ("produced", "message"),
    [
        ({"x.md": "x"}, "returned no SKILL.md"),
        ({"SKILL.md": skill_md("weekly")}, "'name' is 'weekly' but the directory is named 'daily'"),
        ({"SKILL.md": skill_md("daily"), "../x": "x"}, "returned the file path '../x'"),
        ({"SKILL.md": skill_md("daily"), "a": 1}, "returned int for 'a': return str or bytes"),
        (["SKILL.md"], "returned list: return a dict of file paths"),
    ],
)
def test_a_dynamic_skill_that_returns_something_unservable(produced: object, message: str) -> None:
    catalog = catalog_of(SkillSource("dynamic", skill_path="daily", producer=lambda: produced))
    with pytest.raises(DynamicSkillError, match=message.replace("(", r"\(")):
        catalog.get_result({"uri": "skill://daily/SKILL.md"})
    assert catalog.list_result({}, 100) == {"skills": []}  # left out, the error logged


def test_a_dynamic_skill_that_raises() -> None:
    def broken() -> dict[str, str]:
        raise KeyError("db")

    catalog = catalog_of(SkillSource("dynamic", skill_path="daily", producer=broken))
    with pytest.raises(DynamicSkillError, match="the dynamic skill 'daily' failed: KeyError"):
        catalog.get_result({"uri": "skill://daily/SKILL.md"})


def test_no_skill_inside_a_dynamic_one(tmp_path: pathlib.Path) -> None:
    """A folder skill inside a dynamic skill, or around one, is refused, each worded as it
    lies (a skill around a dynamic one read as inside it, the two roots swapped)."""
    write(tmp_path, {"daily/inner/SKILL.md": skill_md("inner"), "ops/SKILL.md": skill_md("ops")})
    fix = "a dynamic skill's function makes all of its files; use another path"
    catalog = catalog_of(SkillSource("dynamic", skill_path="daily", producer=dict))
    with pytest.raises(SkillError) as caught:
        catalog.add(folder(tmp_path))
    assert caught.value.problems == (
        Problem(
            str(tmp_path),
            "puts a skill at skill://daily/inner, inside the dynamic skill skill://daily of "
            f"dynamic skill 'daily': {fix}",
        ),
    )
    catalog = catalog_of(folder(tmp_path))
    with pytest.raises(SkillError) as caught:
        catalog.add(SkillSource("dynamic", skill_path="ops/today", producer=dict))
    assert caught.value.problems == (
        Problem(
            str(tmp_path),
            "puts a skill at skill://ops, around the dynamic skill skill://ops/today of "
            f"dynamic skill 'ops/today': {fix}",
        ),
    )


def test_refresh_sees_files_added_removed_and_rewritten(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "demo/a.md": "a", "demo/b.md": "b"})
    catalog = catalog_of(folder(tmp_path))
    assert catalog.refresh() == (Change(), [])
    touch(tmp_path / "demo" / "a.md", "a, longer")
    (tmp_path / "demo" / "b.md").unlink()
    touch(tmp_path / "demo" / "c.md", "c")
    change, problems = catalog.refresh()
    assert problems == []
    assert change.added == ("skill://demo/c.md",)
    assert change.removed == ("skill://demo/b.md",)
    assert change.modified == ("skill://demo/a.md",)
    entry = catalog.get_result({"uri": "skill://demo/SKILL.md"})["skill"]
    sizes = {item["uri"]: item["size"] for item in entry["resources"]}
    assert sizes["skill://demo/a.md"] == len("a, longer") and "skill://demo/b.md" not in sizes
    assert not catalog.refresh()[0]


def test_a_broken_edit_takes_away_that_skill_only(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "other/SKILL.md": skill_md("other")})
    catalog = catalog_of(folder(tmp_path))
    touch(tmp_path / "demo" / "SKILL.md", "---\nname: demo\n")  # saved half way
    change, problems = catalog.refresh()
    assert not change and "does not begin with YAML frontmatter" in str(problems[0])
    with pytest.raises(MCPError) as caught:  # its entry would describe bytes that are gone
        catalog.get_result({"uri": "skill://demo/SKILL.md"})
    assert caught.value.message.startswith(
        "skill://demo/SKILL.md is not served while the skill's files changed on disk and no "
        "longer load: SKILL.md: does not begin with YAML frontmatter"
    )
    assert str(tmp_path) not in caught.value.message  # no path of the server's disk
    assert catalog.broken("skill://demo/SKILL.md") == caught.value.message.split(" while ")[1]
    listed = [entry["uri"] for entry in catalog.list_result({}, 10)["skills"]]
    assert listed == ["skill://other/SKILL.md"]
    assert catalog.refresh() == (change, [])  # told once, until the next change
    touch(tmp_path / "demo" / "SKILL.md", skill_md("demo", description="Fixed."))
    change, problems = catalog.refresh()
    assert change.modified == ("skill://demo/SKILL.md",) and problems == []


def test_a_read_of_a_file_changed_on_disk_is_stale(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "demo/a.md": "a"})
    catalog = catalog_of(folder(tmp_path))
    (tmp_path / "demo" / "a.md").write_text("b")  # same size, new bytes
    with pytest.raises(StaleFile, match="changed since it was loaded"):
        catalog.read("skill://demo/a.md")
    (tmp_path / "demo" / "a.md").unlink()
    with pytest.raises(StaleFile):
        catalog.read("skill://demo/a.md")


def test_the_png_of_the_examples_is_a_blob() -> None:
    catalog = catalog_of(folder(EXAMPLES))
    content, kind = catalog.read("skill://ops/incident-triage/assets/dashboard.png")  # type: ignore[misc]
    assert kind == "image/png" and isinstance(content, bytes)
    data = (EXAMPLES / "ops" / "incident-triage" / "assets" / "dashboard.png").read_bytes()
    assert content == data and base64.b64encode(content)
