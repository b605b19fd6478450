"""The Skills extension on a real app, in both eras, through the test client."""

from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import re
import sys
import threading
import typing as t

import pytest
from flask import Flask
from skill_folders import EXAMPLES
from skill_folders import skill_md
from skill_folders import touch
from skill_folders import write

from flask_mcp import MCP
from flask_mcp import MCPBlueprint
from flask_mcp import MCPError
from flask_mcp.errors import INTERNAL_ERROR
from flask_mcp.errors import INVALID_PARAMS
from flask_mcp.extensions.skills import Problem
from flask_mcp.extensions.skills import SkillError
from flask_mcp.extensions.skills import Skills
from flask_mcp.extensions.skills import SkillSource
from flask_mcp.testing import MCPTestClient

ERAS = ["2025-11-25", "2026-07-28"]


def make_app(skills: Skills, **config: t.Any) -> Flask:
    mcp = MCP(name="skills-test", version="1.0.0")
    mcp.add_extension(skills)
    app = Flask(__name__)
    app.config.update(SECRET_KEY="test", **config)
    mcp.init_app(app)
    return app


def examples() -> Skills:
    skills = Skills()
    skills.add_folder(EXAMPLES)
    return skills


def raw(contents: dict[str, t.Any]) -> bytes:
    if "text" in contents:
        return str(contents["text"]).encode("utf-8")
    return base64.b64decode(contents["blob"])


@pytest.mark.parametrize("version", ERAS)
def test_declared_with_directory_read(version: str) -> None:
    with MCPTestClient(make_app(examples()), protocol_version=version) as client:
        capabilities = client.server_result["capabilities"]
    assert capabilities["extensions"] == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
    assert "resources" in capabilities  # the skills' files are resources


@pytest.mark.parametrize("version", ERAS)
def test_every_file_reads_back_as_its_manifest_says(version: str) -> None:
    with MCPTestClient(make_app(examples()), protocol_version=version) as client:
        entries = client.request("skills/list")["skills"]
        listed = {item["uri"]: item for item in client.list_resources()}
        checked = 0
        for entry in entries:
            for resource in entry["resources"]:
                (contents,) = client.read_resource(resource["uri"])
                data = raw(contents)
                assert len(data) == resource["size"]
                assert "sha256:" + hashlib.sha256(data).hexdigest() == resource["digest"]
                assert contents["mimeType"] == listed[resource["uri"]]["mimeType"]
                checked += 1
    assert checked == 7
    skill_file = listed["skill://ops/incident-triage/SKILL.md"]
    assert skill_file["name"] == "incident-triage"
    assert skill_file["description"].startswith("Triage a production incident.")
    assert skill_file["mimeType"] == "text/markdown"
    png = listed["skill://ops/incident-triage/assets/dashboard.png"]
    assert (png["name"], png["mimeType"], png["size"]) == ("dashboard.png", "image/png", 297)


def test_cache_hints_at_2026_07_28_only() -> None:
    skills = Skills()
    skills.add_folder(EXAMPLES)
    skills.add_folder(EXAMPLES, prefix="cached", ttl_ms=60_000, cache_scope="public")
    config = {"MCP_CACHE_TTL_MS": 5000, "MCP_CACHE_SCOPE": "public", "MCP_READ_CACHE_TTL_MS": 7}
    app = make_app(skills, **config)
    with MCPTestClient(app, protocol_version="2026-07-28") as client:
        listing = client.request("skills/list")
        assert (listing["ttlMs"], listing["cacheScope"]) == (5000, "public")
        plain = client.request("skills/get", {"uri": "skill://flask-deploy/SKILL.md"})
        assert (plain["ttlMs"], plain["cacheScope"]) == (7, "private")
        cached = client.request("skills/get", {"uri": "skill://cached/flask-deploy/SKILL.md"})
        assert (cached["ttlMs"], cached["cacheScope"]) == (60_000, "public")
        read = client.request("resources/read", {"uri": "skill://cached/flask-deploy/SKILL.md"})
        assert (read["ttlMs"], read["cacheScope"]) == (60_000, "public")
        directory = client.request("resources/directory/read", {"uri": "skill://flask-deploy"})
        assert "ttlMs" not in directory  # not a CacheableResult
    with MCPTestClient(app, protocol_version="2025-11-25") as client:
        assert "ttlMs" not in client.request("skills/list")
        assert "cacheScope" not in client.request("skills/get", {"uri": plain["skill"]["uri"]})


@pytest.mark.parametrize("version", ERAS)
def test_pagination_follows_mcp_page_size(version: str, tmp_path: pathlib.Path) -> None:
    write(tmp_path, {f"s{n}/SKILL.md": skill_md(f"s{n}") for n in range(5)})
    skills = Skills()
    skills.add_folder(tmp_path)
    with MCPTestClient(make_app(skills, MCP_PAGE_SIZE=2), protocol_version=version) as client:
        names, params = [], {}
        while True:
            page = client.request("skills/list", params)
            assert len(page["skills"]) <= 2
            names += [entry["frontmatter"]["name"] for entry in page["skills"]]
            if "nextCursor" not in page:
                break
            params = {"cursor": page["nextCursor"]}
    assert names == ["s0", "s1", "s2", "s3", "s4"]


@pytest.mark.parametrize("version", ERAS)
def test_a_skill_not_listed_is_served_by_uri(version: str) -> None:
    skills = examples()
    skills.add_folder(EXAMPLES, prefix="internal", listed=False)
    with MCPTestClient(make_app(skills), protocol_version=version) as client:
        listed = [entry["uri"] for entry in client.request("skills/list")["skills"]]
        assert listed == ["skill://flask-deploy/SKILL.md", "skill://ops/incident-triage/SKILL.md"]
        resources = [item["uri"] for item in client.list_resources()]
        assert len(resources) == 7
        assert not [uri for uri in resources if uri.startswith("skill://internal/")]
        got = client.request("skills/get", {"uri": "skill://internal/ops/incident-triage/SKILL.md"})
        assert got["skill"]["frontmatter"]["name"] == "incident-triage"
        for resource in got["skill"]["resources"]:
            (contents,) = client.read_resource(resource["uri"])
            assert "sha256:" + hashlib.sha256(raw(contents)).hexdigest() == resource["digest"]


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("skills/get", {"uri": "skill://acme/nope/SKILL.md"}, "No skill is served at skill://acme"),
        ("skills/get", {}, "Invalid params: 'uri' must be a non-empty string."),
        ("skills/list", {"cursor": "garbage"}, "Invalid cursor"),
        ("resources/directory/read", {"uri": "skill://flask-deploy/SKILL.md"}, "is not a dir"),
        ("resources/directory/read", {"uri": "skill://nope"}, "No directory resource at"),
    ],
)
def test_invalid_params(version: str, method: str, params: dict, message: str) -> None:
    client = MCPTestClient(make_app(examples()), protocol_version=version)
    with client, pytest.raises(MCPError) as caught:
        client.request(method, params)
    assert caught.value.code == INVALID_PARAMS and message in caught.value.message


@pytest.mark.parametrize("version", ERAS)
def test_directory_reads(version: str) -> None:
    with MCPTestClient(make_app(examples()), protocol_version=version) as client:
        top = client.request("resources/directory/read", {"uri": "skill://ops/incident-triage"})
        names = [(item["name"], item["mimeType"]) for item in top["resources"]]
        assert names == [
            ("SKILL.md", "text/markdown"),
            ("assets", "inode/directory"),
            ("references", "inode/directory"),
            ("templates", "inode/directory"),
        ]
        below = client.request(
            "resources/directory/read", {"uri": "skill://ops/incident-triage/templates"}
        )
        (item,) = below["resources"]
        (contents,) = client.read_resource(item["uri"])
        assert contents["text"].startswith("**[SEVx]")


@pytest.mark.parametrize("version", ERAS)
def test_a_dynamic_skill(version: str) -> None:
    skills = Skills()
    state = {"n": 1}

    @skills.dynamic("reports/daily")
    def daily() -> dict[str, str | bytes]:
        return {
            "SKILL.md": skill_md("daily", extra=f"metadata:\n  run: '{state['n']}'\n"),
            "data/run.txt": f"run {state['n']}\n",
            "data/raw.bin": b"\x00\xff",
        }

    with MCPTestClient(make_app(skills), protocol_version=version) as client:
        (entry,) = client.request("skills/list")["skills"]
        assert entry["resources"] == "dynamic" and entry["frontmatter"]["metadata"]["run"] == "1"
        state["n"] = 2
        (text,) = client.read_resource("skill://reports/daily/data/run.txt")
        assert (text["text"], text["mimeType"]) == ("run 2\n", "text/plain")
        (blob,) = client.read_resource("skill://reports/daily/data/raw.bin")
        assert base64.b64decode(blob["blob"]) == b"\x00\xff"
        (skill_file,) = client.read_resource("skill://reports/daily/SKILL.md")
        assert "run: '2'" in skill_file["text"]
        with pytest.raises(MCPError):
            client.read_resource("skill://reports/daily/data/missing.txt")
        tree = client.request("resources/directory/read", {"uri": "skill://reports/daily/data"})
        assert [item["name"] for item in tree["resources"]] == ["raw.bin", "run.txt"]


@pytest.mark.parametrize("version", ERAS)
def test_a_dynamic_skill_directory_whose_uri_is_percent_encoded(version: str) -> None:
    skills = Skills()
    skills.add_dynamic(
        "reports/daily",
        lambda: {"SKILL.md": skill_md("daily"), "raw data/ünï.txt": "1\n"},
    )
    with MCPTestClient(make_app(skills), protocol_version=version) as client:
        root = client.request("resources/directory/read", {"uri": "skill://reports/daily"})
        directory = root["resources"][1]
        assert directory == {
            "uri": "skill://reports/daily/raw%20data",
            "name": "raw data",
            "mimeType": "inode/directory",
        }
        below = client.request("resources/directory/read", {"uri": directory["uri"]})
        (item,) = below["resources"]
        assert item["uri"] == "skill://reports/daily/raw%20data/%C3%BCn%C3%AF.txt"
        (contents,) = client.read_resource(item["uri"])
        assert contents["text"] == "1\n"
        with pytest.raises(MCPError, match="is not a directory resource"):
            client.request("resources/directory/read", {"uri": item["uri"]})
        with pytest.raises(MCPError, match="No directory resource at skill://reports/daily/"):
            client.request("resources/directory/read", {"uri": "skill://reports/daily/"})


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize(("debug", "shown"), [(True, True), (False, False)])
def test_a_failing_dynamic_skill_is_left_out_of_the_listing(
    version: str, debug: bool, shown: bool, caplog: pytest.LogCaptureFixture
) -> None:
    def crash() -> dict[str, str | bytes]:
        raise RuntimeError("password=hunter2")

    skills = Skills()
    skills.add_dynamic("broken", lambda: {"SKILL.md": "no frontmatter"})
    skills.add_dynamic("crash", crash, listed=False)
    skills.add_dynamic("fine", lambda: {"SKILL.md": skill_md("fine")})
    app = make_app(skills)
    app.debug = debug
    client = MCPTestClient(app, protocol_version=version)
    with client:
        listed = client.request("skills/list")["skills"]
        assert [entry["uri"] for entry in listed] == ["skill://fine/SKILL.md"]
        (record,) = [record for record in caplog.records if "leaves it out" in record.message]
        assert "does not begin with YAML frontmatter" in record.message
        with pytest.raises(MCPError) as caught:
            client.request("skills/get", {"uri": "skill://broken/SKILL.md"})
        assert caught.value.code == INTERNAL_ERROR
        assert ("does not begin with YAML frontmatter" in caught.value.message) is shown
        with pytest.raises(MCPError) as caught:
            client.request("skills/get", {"uri": "skill://crash/SKILL.md"})
        assert caught.value.code == INTERNAL_ERROR
        assert ("hunter2" in caught.value.message) is shown


def test_registration_errors_surface_when_declared(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("other")})
    with pytest.raises(SkillError, match="'name' is 'other' but the directory is named 'demo'"):
        Skills().add_folder(tmp_path)
    with pytest.raises(ValueError, match="cache_scope must be 'public' or 'private'"):
        Skills().add_folder(EXAMPLES, cache_scope="shared")


def test_a_relative_folder_is_relative_to_the_calling_module() -> None:
    skills = Skills()
    skills.add_folder("../examples/skills")  # this module is in tests/
    assert [skill.path for skill in skills.catalog.skills] == [
        "flask-deploy",
        "ops/incident-triage",
    ]
    one = Skills()
    one.add_skill("../examples/skills/ops/incident-triage", prefix="ops")
    assert one.catalog.skills[0].uri == "skill://ops/incident-triage/SKILL.md"


def test_skills_declared_after_setup_become_resources(tmp_path: pathlib.Path) -> None:
    skills = Skills()
    app = make_app(skills)
    write(tmp_path, {"late/SKILL.md": skill_md("late")})
    skills.add_folder(tmp_path)
    with MCPTestClient(app) as client:
        (contents,) = client.read_resource("skill://late/SKILL.md")
        assert contents["text"] == skill_md("late")


@pytest.mark.parametrize("version", ERAS)
def test_debug_mode_sees_the_folder_change(version: str, tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "demo/a.md": "a"})
    skills = Skills()
    skills.watch_interval = 0
    skills.add_folder(tmp_path)
    app = make_app(skills)
    app.debug = True
    with MCPTestClient(app, protocol_version=version) as client:
        client.request("skills/list")
        with client.listen(resources=True, resource_uris=["skill://demo/a.md"]) as events:
            touch(tmp_path / "demo" / "a.md", "a, rewritten")
            write(tmp_path, {"demo/b.md": "b"})
            (entry,) = client.request("skills/list")["skills"]
            wanted = {
                "notifications/resources/list_changed": None,
                "notifications/resources/updated": {"uri": "skill://demo/a.md"},
            }
            for _ in range(len(wanted)):
                event = events.get(10)
                assert event is not None and event["method"] in wanted
                assert event.get("params", {}).get("uri") == (
                    wanted.pop(event["method"]) or {}
                ).get("uri")
        sizes = {item["uri"]: item["size"] for item in entry["resources"]}
        assert sizes == {
            "skill://demo/SKILL.md": len(skill_md("demo")),
            "skill://demo/a.md": len("a, rewritten"),
            "skill://demo/b.md": 1,
        }
        uris = [item["uri"] for item in client.list_resources()]
        assert "skill://demo/b.md" in uris
        (contents,) = client.read_resource("skill://demo/a.md")
        assert contents["text"] == "a, rewritten"


def test_a_skill_file_taking_a_resource_uri_on_disk_is_not_served(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "other/SKILL.md": skill_md("other")})
    skills = Skills()
    skills.watch_interval = 0
    skills.add_folder(tmp_path)
    mcp = MCP(name="skills-test", version="1.0.0")
    mcp.add_extension(skills)
    mcp.resource("skill://demo/notes.md", mime_type="text/markdown")(lambda: "the app's")
    app = Flask(__name__)
    mcp.init_app(app)
    with MCPTestClient(app) as client:
        write(tmp_path, {"demo/notes.md": "the skill's"})  # as a startup would refuse
        touch(tmp_path / "other" / "SKILL.md", skill_md("other", description="New."))
        (entry,) = client.request("skills/list")["skills"]  # demo is held back, not other
        assert entry["frontmatter"] == {"name": "other", "description": "New."}
        with pytest.raises(MCPError, match="skill://demo/notes.md, which is another resource"):
            client.request("skills/get", {"uri": "skill://demo/SKILL.md"})
        (contents,) = client.read_resource("skill://demo/notes.md")
        assert contents["text"] == "the app's"
        client.request("skills/list")
    (record,) = [r for r in caplog.records if "another resource" in r.message]  # told once
    assert record.levelname == "ERROR" and "give the skill source another prefix" in record.message
    # At startup the clash is refused, naming the folder, the skill and the fixes (it was
    # the registry's "already registered"); a folder added later leaves nothing served.
    fix = (
        "the skill skill://demo/SKILL.md serves skill://demo/notes.md, which is another "
        "resource of the server already: rename the skill (its folder) or that file, give "
        "the skill source another prefix (prefix=), or remove the other resource"
    )
    for added_first in (True, False):
        late = MCP(name="skills-test", version="1.0.0")
        late.resource("skill://demo/notes.md")(lambda: "the app's")
        skills = Skills()
        if added_first:
            skills.add_folder(tmp_path)
        checks = list(late.registry.removal_checks)
        with pytest.raises(SkillError) as caught:
            late.add_extension(skills)
            skills.add_folder(tmp_path)
        assert caught.value.problems == (Problem(str(tmp_path), fix),)
        if added_first:  # refused at setup: not added, nothing left on the server
            assert Skills.id not in late.extensions.by_id
            assert late.registry.removal_checks == checks
            more = tmp_path.parent / f"{tmp_path.name}-more"
            write(more, {"more/SKILL.md": skill_md("more")})
            skills.add_folder(more)  # declared on no server: late is not its server
            assert list(late.registry.resources) == ["skill://demo/notes.md"]
    assert skills.catalog.skills == [] and list(late.registry.resources) == [
        "skill://demo/notes.md"
    ]
    late.resource("skill://daily/{+file}")(lambda file: file)
    with pytest.raises(SkillError, match=r"skill://daily/\{\+file\}, which is another"):
        skills.add_dynamic("daily", lambda: {"SKILL.md": skill_md("daily")})


def test_without_debug_only_manifests_and_reads_follow_the_folder(
    tmp_path: pathlib.Path,
) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "demo/a.md": "a"})
    skills = Skills()
    skills.watch_interval = 0
    skills.add_folder(tmp_path)
    with MCPTestClient(make_app(skills)) as client:
        write(tmp_path, {"demo/b.md": "b"})
        uris = [item["uri"] for item in client.list_resources()]
        assert "skill://demo/b.md" not in uris  # not looked at: no debug mode
        (entry,) = client.request("skills/list")["skills"]
        assert len(entry["resources"]) == 3  # a manifest is looked at in every mode
        write(tmp_path, {"demo/c.md": "c"})
        touch(tmp_path / "demo" / "a.md", "A")  # same size, other bytes
        (contents,) = client.read_resource("skill://demo/a.md")
        assert contents["text"] == "A"  # the read found the change and loaded the skill again
        (entry,) = client.request("skills/list")["skills"]
        digests = {item["uri"]: item["digest"] for item in entry["resources"]}
        assert digests["skill://demo/a.md"] == "sha256:" + hashlib.sha256(b"A").hexdigest()
        assert "skill://demo/c.md" in digests  # the reload saw the whole folder


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("version", ERAS)
def test_a_file_replaced_by_a_pipe_is_not_read(version: str, tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "demo/a.md": "a"})
    skills = Skills()
    skills.add_folder(tmp_path)
    pipe = tmp_path / "demo" / "a.md"
    pipe.unlink()
    os.mkfifo(pipe)  # or a link to /dev/zero: loading refuses both, a read must not block
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            with MCPTestClient(make_app(skills), protocol_version=version) as client:
                client.read_resource("skill://demo/a.md")
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():
        with open(pipe, "wb"):  # let the blocked read end
            pass
        reader.join(10)
        pytest.fail("the read of a pipe blocked the worker")
    (error,) = outcome
    assert isinstance(error, MCPError) and "skill://demo/a.md" in error.message


def test_a_rewrite_that_keeps_size_and_time_is_still_caught_by_the_read(
    tmp_path: pathlib.Path,
) -> None:
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "demo/a.md": "aaaa"})
    skills = Skills()
    skills.add_folder(tmp_path)
    path = tmp_path / "demo" / "a.md"
    before = path.stat()
    with MCPTestClient(make_app(skills)) as client:
        path.write_text("bbbb")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # nothing stat can see
        (contents,) = client.read_resource("skill://demo/a.md")
        assert contents["text"] == "bbbb"
        (entry,) = client.request("skills/list")["skills"]
    digests = {item["uri"]: item["digest"] for item in entry["resources"]}
    assert digests["skill://demo/a.md"] == "sha256:" + hashlib.sha256(b"bbbb").hexdigest()


@pytest.mark.parametrize("version", ERAS)
def test_text_reads_keep_every_byte(version: str, tmp_path: pathlib.Path) -> None:
    data = "\ufeffa byte-order mark,\r\nCRLF line ends, tabs\tand é ü 漢字\r\n".encode()
    write(tmp_path, {"demo/SKILL.md": skill_md("demo"), "demo/notes.txt": data})
    skills = Skills()
    skills.add_folder(tmp_path)
    with MCPTestClient(make_app(skills), protocol_version=version) as client:
        (contents,) = client.read_resource("skill://demo/notes.txt")
        (entry,) = client.request("skills/list")["skills"]
    assert "text" in contents and raw(contents) == data
    manifest = {item["uri"]: item for item in entry["resources"]}["skill://demo/notes.txt"]
    assert manifest["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()


def test_a_blueprints_skills_come_under_its_uri_prefix() -> None:
    root = EXAMPLES.parent  # a blueprint resolves its relative folders against its own root
    sources = [
        SkillSource.at("folder", "skills", root),
        SkillSource.at("skill", "skills/ops/incident-triage", root, prefix="again"),
    ]
    skills = Skills()
    skills.add_sources(sources, uri_prefix="billing")
    assert [skill.uri for skill in skills.catalog.skills] == [
        "skill://billing/flask-deploy/SKILL.md",
        "skill://billing/ops/incident-triage/SKILL.md",
        "skill://billing/again/incident-triage/SKILL.md",
    ]


def declare_for_my_caller(skills: Skills, path: str) -> None:
    skills.add_folder(path, stacklevel=2)


def test_stacklevel_names_whose_module_a_relative_path_follows() -> None:
    skills = Skills()
    declare_for_my_caller(skills, "../examples/skills")
    assert len(skills.catalog.skills) == 2


def test_without_pyyaml_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    from flask_mcp.extensions.skills import frontmatter

    monkeypatch.setattr(frontmatter, "_yaml_loader", None)
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml raises ImportError
    write(tmp_path, {"demo/SKILL.md": skill_md("demo")})
    with pytest.raises(ImportError) as caught:
        Skills().add_folder(tmp_path)
    assert str(caught.value) == (
        "Serving skills needs PyYAML to read SKILL.md frontmatter, which is not installed: "
        "pip install 'Flask-MCP[skills]'."
    )


@pytest.mark.parametrize("version", ERAS)
def test_the_face_methods_add_the_extension_once(version: str, tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"one/SKILL.md": skill_md("one"), "one/notes.md": "notes"})
    mcp = MCP(name="skills-test", version="1.0.0")
    assert mcp.skills_folder("../examples/skills") == []  # relative to this module
    mcp.add_skill(tmp_path / "one", prefix="extra", listed=False)

    @mcp.dynamic_skill("gen/today", ttl_ms=5)
    def today() -> dict[str, str | bytes]:
        return {"SKILL.md": skill_md("today"), "data.csv": b"a,b\n1,2\n"}

    assert mcp.skills() is mcp.extension("io.modelcontextprotocol/skills")
    app = Flask(__name__)
    app.config["SECRET_KEY"] = "test"
    mcp.init_app(app)
    with MCPTestClient(app, protocol_version=version) as client:
        listed = client.request("skills/list")["skills"]
        assert [(entry["uri"], entry["resources"] == "dynamic") for entry in listed] == [
            ("skill://flask-deploy/SKILL.md", False),
            ("skill://ops/incident-triage/SKILL.md", False),
            ("skill://gen/today/SKILL.md", True),
        ]
        hidden = client.request("skills/get", {"uri": "skill://extra/one/SKILL.md"})["skill"]
        assert [item["uri"] for item in hidden["resources"]] == [
            "skill://extra/one/SKILL.md",
            "skill://extra/one/notes.md",
        ]
        (contents,) = client.read_resource("skill://gen/today/data.csv")
        assert raw(contents) == b"a,b\n1,2\n"


def test_a_blueprint_carries_skills(tmp_path: pathlib.Path) -> None:
    write(tmp_path, {"refunds/SKILL.md": skill_md("refunds")})
    bp = MCPBlueprint("billing", __name__)
    bp.skills_folder("../examples/skills")  # relative to the blueprint's module
    bp.add_skill(tmp_path / "refunds", prefix="policy", listed=False)
    mcp = MCP(name="skills-test", version="1.0.0")
    mcp.register_blueprint(bp, prefix="billing_")
    mcp.register_blueprint(bp, prefix="shop_", uri_prefix="shop")
    app = Flask(__name__)
    app.config["SECRET_KEY"] = "test"
    mcp.init_app(app)
    with MCPTestClient(app) as client:
        listed = [entry["uri"] for entry in client.request("skills/list")["skills"]]
        assert listed == [
            "skill://billing/flask-deploy/SKILL.md",
            "skill://billing/ops/incident-triage/SKILL.md",
            "skill://shop/flask-deploy/SKILL.md",
            "skill://shop/ops/incident-triage/SKILL.md",
        ]
        for uri in (
            "skill://billing/policy/refunds/SKILL.md",
            "skill://shop/policy/refunds/SKILL.md",
        ):
            assert client.request("skills/get", {"uri": uri})["skill"]["uri"] == uri
    with pytest.raises(RuntimeError, match="already registered"):
        bp.skills_folder("../examples/skills")


def test_a_failed_blueprint_registration_leaves_no_skill_and_no_view(
    tmp_path: pathlib.Path,
) -> None:
    write(tmp_path, {"refunds/SKILL.md": skill_md("refunds")})
    bp = MCPBlueprint("billing", __name__)
    bp.skills_folder(tmp_path)
    bp.ui_template("ui://billing/card", "card.html")

    @bp.tool(ui="ui://billing/card")
    def pay() -> str:
        """Pay."""
        return "paid"

    mcp = MCP(name="skills-test", version="1.0.0")

    @mcp.tool()
    def billing_pay() -> str:
        """Takes the name the blueprint's tool gets."""
        return ""

    before = sorted(mcp.registry.resources)
    with pytest.raises(ValueError, match="'billing_pay' is already registered"):
        mcp.register_blueprint(bp, prefix="billing_")
    skills = mcp.extension(Skills.id)
    assert t.cast(Skills, skills).catalog.skills == []
    assert sorted(mcp.registry.resources) == before
    assert mcp.apps.views == {}
    mcp.register_blueprint(bp, prefix="shop_", uri_prefix="billing")  # the same URIs: free
    assert "skill://billing/refunds/SKILL.md" in mcp.registry.resources
    assert "ui://billing/billing/card" in mcp.registry.resources
    assert mcp.registry.tools["shop_pay"].meta["ui"]["resourceUri"] == "ui://billing/billing/card"


def dynamic_blueprint() -> MCPBlueprint:
    bp = MCPBlueprint("reports", __name__)

    @bp.dynamic_skill("daily", ttl_ms=5, description="Summarise today's report.")
    def daily() -> dict[str, str | bytes]:
        return {
            "SKILL.md": skill_md("daily", description="Summarise today's report."),
            "data/run.txt": "run 1\n",
        }

    return bp


@pytest.mark.parametrize("version", ERAS)
def test_a_blueprint_carries_a_dynamic_skill(version: str) -> None:
    bp = dynamic_blueprint()
    mcp = MCP(name="skills-test", version="1.0.0")
    mcp.register_blueprint(bp, prefix="eu_")
    mcp.register_blueprint(bp, prefix="us_", uri_prefix="us/west")
    app = Flask(__name__)
    app.config["SECRET_KEY"] = "test"
    mcp.init_app(app)
    with MCPTestClient(app, protocol_version=version) as client:
        listed = client.request("skills/list")["skills"]
        assert [
            (entry["uri"], entry["frontmatter"]["description"], entry["resources"])
            for entry in listed
        ] == [
            ("skill://eu/daily/SKILL.md", "Summarise today's report.", "dynamic"),
            ("skill://us/west/daily/SKILL.md", "Summarise today's report.", "dynamic"),
        ]
        resources = {item["uri"]: item for item in client.list_resources()}
        assert resources["skill://eu/daily/SKILL.md"]["description"] == (
            "Summarise today's report."
        )
        uri = "skill://us/west/daily/SKILL.md"
        assert client.request("skills/get", {"uri": uri})["skill"]["uri"] == uri
        (contents,) = client.read_resource("skill://eu/daily/data/run.txt")
        assert contents["text"] == "run 1\n"
    with pytest.raises(RuntimeError, match="already registered"):
        bp.dynamic_skill("later")
    with pytest.raises(TypeError, match=r"got unknown keywords \['prefix'\]"):
        MCPBlueprint("other").dynamic_skill("x", prefix="no")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"description": ""}, ValueError, "description must be 1 to 1024 characters"),
        ({"description": "x" * 1025}, ValueError, "saying what the skill does, got 1025."),
        ({"description": 7}, TypeError, "description must be a str"),
        ({"ttl_ms": -1}, ValueError, "ttl_ms must be an integer >= 0"),
        ({"cache_scope": "shared"}, ValueError, "cache_scope must be 'public' or 'private'"),
    ],
)
def test_a_dynamic_skill_is_refused_when_declared_on_server_and_blueprint_alike(
    options: dict[str, t.Any], error: type[Exception], message: str
) -> None:
    def files() -> dict[str, str | bytes]:
        return {"SKILL.md": skill_md("daily")}

    with pytest.raises(error, match=re.escape(message)) as on_server:
        MCP(name="skills-test", version="1.0.0").dynamic_skill("daily", **options)(files)
    bp = MCPBlueprint("reports", __name__)
    with pytest.raises(error) as on_blueprint:  # not first at mcp.register_blueprint
        bp.dynamic_skill("daily", **options)(files)
    assert str(on_blueprint.value) == str(on_server.value)
    assert bp.carried == {}


def test_a_refused_blueprint_registration_leaves_no_dynamic_skill() -> None:
    bp = dynamic_blueprint()

    @bp.tool()
    def summary() -> str:
        """Summary."""
        return ""

    mcp = MCP(name="skills-test", version="1.0.0")

    @mcp.tool()
    def eu_summary() -> str:
        """Takes the name the blueprint's tool gets."""
        return ""

    mcp.skills()
    before = (sorted(mcp.registry.resources), sorted(mcp.registry.templates))
    with pytest.raises(ValueError, match="'eu_summary' is already registered"):
        mcp.register_blueprint(bp, prefix="eu_")
    assert mcp.skills().catalog.skills == []
    assert (sorted(mcp.registry.resources), sorted(mcp.registry.templates)) == before
    mcp.register_blueprint(bp, prefix="de_", uri_prefix="eu")  # the same URIs: free
    assert "skill://eu/daily/SKILL.md" in mcp.registry.resources
    assert "skill://eu/daily/{+file}" in mcp.registry.templates


@pytest.mark.parametrize("version", ERAS)
def test_declared_with_the_resources_capability_once_a_skill_is_served(version: str) -> None:
    mcp = MCP(name="skills-test", version="1.0.0")
    mcp.skills()  # the extension, no skill yet
    app = Flask(__name__)
    app.config["SECRET_KEY"] = "test"
    mcp.init_app(app)
    with MCPTestClient(app, protocol_version=version) as client:
        assert "io.modelcontextprotocol/skills" not in client.server_result["capabilities"].get(
            "extensions", {}
        )
    mcp.skills_folder("../examples/skills", listed=False)
    with MCPTestClient(app, protocol_version=version) as client:
        capabilities = client.server_result["capabilities"]
    assert capabilities["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}
    assert "resources" in capabilities


def test_prefix_none_is_no_prefix_and_a_wrong_type_is_a_type_error(
    tmp_path: pathlib.Path,
) -> None:
    write(tmp_path, {"one/SKILL.md": skill_md("one")})
    mcp = MCP(name="skills-test", version="1.0.0")
    mcp.skills_folder(tmp_path, prefix=None)
    bp = MCPBlueprint("billing", __name__)
    bp.add_skill(tmp_path / "one", prefix=None, listed=False)
    mcp.register_blueprint(bp, uri_prefix="billing")
    for face in (mcp.skills_folder, mcp.add_skill, bp.skills_folder, bp.add_skill):
        with pytest.raises(TypeError, match=r"prefix must be a str .* not int"):
            face(tmp_path, prefix=3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"listed must be True or False, not 'no'"):
            face(tmp_path, listed="no")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"got unknown keywords \['description'\]"):
            face(tmp_path, description="Only a dynamic skill's.")  # type: ignore[call-arg]
    app = Flask(__name__)
    app.config["SECRET_KEY"] = "test"
    mcp.init_app(app)
    with MCPTestClient(app) as client:
        listed = [entry["uri"] for entry in client.request("skills/list")["skills"]]
        assert listed == ["skill://one/SKILL.md"]
        uri = "skill://billing/one/SKILL.md"
        assert client.request("skills/get", {"uri": uri})["skill"]["uri"] == uri
