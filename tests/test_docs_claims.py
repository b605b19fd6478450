"""What the docs state about the code, checked against the code, so the two cannot drift.

Each test reads a claim where the docs make it (a table row, a YAML block, a shell
command) and compares it with what the code or the tool it names does.
"""

from __future__ import annotations

import json
import re
import typing as t
from pathlib import Path

import pytest
from flask import Flask
from wire import HEADERS
from wire import initialize_request

from flask_mcp import MCP
from flask_mcp.config import KEYS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: Flip when Flask-MCP is published on a package index (then `pip install Flask-MCP` works).
PUBLISHED_ON_AN_INDEX = False


def page(name: str) -> str:
    return (DOCS / name).read_text()


def section(text: str, title: str) -> str:
    """The text of the section ``title`` (a ``##`` heading) up to the next ``##`` heading."""
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def fenced(text: str) -> list[tuple[str, str]]:
    """Every fenced block of ``text``: (info string, code)."""
    return re.findall(r"^```([^\n`]*)\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)


# -- health probes --------------------------------------------------------------------------


def test_deployment_uses_the_built_in_health_probes() -> None:
    """docs/deployment.md once said Flask-MCP has no health endpoint: it has two. An app
    configured as the Kubernetes example's environment says answers its probes, sent as
    the kubelet sends them (from the node's address, with the ``httpHeaders`` given)."""
    text = page("deployment.md")
    assert "no health endpoint" not in text.lower()
    for key in (k.name for k in KEYS if k.name.startswith("MCP_HEALTH_")):
        assert key in text, f"docs/deployment.md does not name {key}"
    kubernetes = section(text, "Kubernetes")
    yaml = next(code for info, code in fenced(kubernetes) if info.strip() == "yaml")
    env = dict(re.findall(r"\{name: FLASK_(MCP_\w+), value: (.+)\}$", yaml, re.MULTILINE))
    probes = re.findall(
        r"(liveness|readiness)Probe:\n\s+httpGet: \{path: (\S+), port: \d+(.*)\}$",
        yaml,
        re.MULTILINE,
    )
    assert [kind for kind, _, _ in probes] == ["liveness", "readiness"]
    paths = {kind: path for kind, path, _ in probes}
    assert env["MCP_HEALTH_LIVENESS_PATH"] == paths["liveness"]
    assert env["MCP_HEALTH_READINESS_PATH"] == paths["readiness"]
    app = Flask("probed")
    for key, value in env.items():
        app.config[key] = json.loads(value.strip("'")) if value.startswith("'") else value
    app.config["MCP_BACKEND"] = "memory://"  # the example's Redis is not here
    MCP(app, name="probed", version="1")
    client = app.test_client()
    for kind, path, rest in probes:
        headers = dict(re.findall(r"\{name: ([\w-]+), value: ([^}]+)\}", rest))
        answer = client.get(path, headers=headers, environ_base={"REMOTE_ADDR": "10.0.0.7"})
        assert answer.status_code == 200, (kind, answer.status_code, answer.get_data())
        assert answer.json["status"] == ("ok" if kind == "liveness" else "ready")


# -- the statuses of the security checks ------------------------------------------------------


def test_security_page_gives_the_statuses_the_code_sends() -> None:
    """The table of docs/security.md: a refused Host and a refused Origin."""
    rows = {
        row.split("|")[1].strip(): row
        for row in page("security.md").splitlines()
        if row.startswith("| ")
    }
    host = re.search(r"accepted as `Host` \((\d{3})", rows["DNS rebinding against a local server"])
    origin = re.search(r"is refused \((\d{3})\)", rows["cross-origin requests from web pages"])
    assert host and origin, "the rows of docs/security.md no longer state the statuses"
    app = Flask("guarded")
    MCP(app, name="guarded", version="1")
    client = app.test_client()
    body = initialize_request()
    refused_host = client.post("/mcp", json=body, headers={**HEADERS, "Host": "evil.example"})
    assert refused_host.status_code == int(host[1])
    refused_origin = client.post(
        "/mcp", json=body, headers={**HEADERS, "Origin": "https://evil.example"}
    )
    assert refused_origin.status_code == int(origin[1])


# -- installing ------------------------------------------------------------------------------


@pytest.mark.skipif(PUBLISHED_ON_AN_INDEX, reason="Flask-MCP is on an index: its name installs")
def test_no_install_command_asks_an_index_for_flask_mcp() -> None:
    """No index serves Flask-MCP yet: a command that installs it by name fails. The docs
    install it from a checkout or its sdist, as the README does."""
    wrong = []
    for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for _, code in fenced(path.read_text()):
            for line in code.splitlines():
                if "pip install" not in line:
                    continue
                words = line.split("pip install", 1)[1].split("#", 1)[0].split()
                for word in words:
                    if re.fullmatch(r"flask-mcp(\[[\w,]+\])?", word.strip("'\""), re.I):
                        wrong.append(f"{path.name}: {line.strip()}")
    assert wrong == []
    quickstart = section(page("quickstart.md"), "Install")
    assert 'pip install "/path/to/flask-mcp[gevent]"' in quickstart


# -- gunicorn's keep-alive ---------------------------------------------------------------------


def test_deployment_states_gunicorns_keepalive() -> None:
    """The gevent worker gives each request, the first one included, ``keepalive``
    seconds to arrive; docs/deployment.md says so with gunicorn's default and the value
    of contrib/gunicorn.conf.py."""
    from gunicorn.config import Config

    conf = (ROOT / "contrib" / "gunicorn.conf.py").read_text()
    ours = re.search(r"^keepalive = (\d+)$", conf, re.MULTILINE)
    assert ours, "contrib/gunicorn.conf.py no longer sets keepalive"
    gunicorn = section(page("deployment.md"), "gunicorn")
    assert f"`contrib/gunicorn.conf.py` sets {ours[1]} s" in gunicorn
    assert f"({Config().keepalive} s by default)" in gunicorn
    assert "the first one included" in gunicorn
    commands = [code for info, code in fenced(gunicorn) if info.strip() == "bash"]
    assert any(f"--keep-alive {ours[1]}" in code for code in commands)


@pytest.mark.parametrize(
    ("backend", "warned"),
    [
        ("", True),
        ("memory://", True),
        ("redis://127.0.0.1:6379/0", False),
        ("unix:///run/redis.sock", False),
        ("redis+cluster://127.0.0.1:7000", False),
        ("rediss+sentinel://127.0.0.1:26379/mymaster", False),
    ],
)
def test_gunicorn_conf_warns_only_of_workers_on_the_memory_backend(
    backend: str, warned: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """contrib/gunicorn.conf.py warns that sessions are not shared between workers only
    for the in-memory backend: every Redis URL (cluster and sentinel too) is shared."""
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    monkeypatch.setenv("FLASK_MCP_BACKEND", backend)
    exec((ROOT / "contrib" / "gunicorn.conf.py").read_text(), {"__name__": "gunicorn_conf"})
    assert ("WARNING: 2 workers" in capsys.readouterr().err) is warned


# -- a full threaded worker ---------------------------------------------------------------------


def test_max_streams_doc_states_what_a_full_worker_answers() -> None:
    """The doc of MCP_MAX_STREAMS (shown in docs/configuration.md) once said a full worker
    answers 503: only ``subscriptions/listen`` does; a call gets one JSON response and a
    GET a stream that ends at once with a ``retry`` hint."""
    from wire import ThreadedTestClient
    from wire import initialize
    from wire import open_get
    from wire import rpc
    from wire import send_2026

    doc = next(k.doc for k in KEYS if k.name == "MCP_MAX_STREAMS")
    assert "one JSON response" in doc and "``retry`` hint" in doc
    assert "``subscriptions/listen`` gets 503" in doc
    mcp = MCP(name="full", version="1")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app = Flask("full")
    app.config.update(SECRET_KEY="test-secret", MCP_MAX_STREAMS=2)
    app.test_client_class = ThreadedTestClient
    mcp.init_app(app)
    client = app.test_client()
    session = initialize(client)
    mcp.state(app).slots.open = 2  # every stream this worker can hold is taken
    call = rpc(client, session, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert (call.status_code, call.mimetype) == (200, "application/json")
    assert call.json["result"]["structuredContent"] == {"result": 3}
    get = open_get(client, session)
    assert (get.status_code, get.mimetype) == (200, "text/event-stream")
    assert "retry: " in get.get_data(as_text=True)
    listen_params = {"notifications": {"toolsListChanged": True}}
    listen = send_2026(client, "subscriptions/listen", listen_params)
    assert listen.status_code == 503


# -- the CLI's sample session ------------------------------------------------------------------


def test_cli_page_shows_what_the_commands_print() -> None:
    """The console block of docs/cli.md's "Looking at a server" once showed a result with
    spaces the CLI does not print. Each line it shows under a command (``...`` elides, a
    ``<- stderr`` note is the page's) is a line the command prints."""
    import shlex

    from examples.quickstart import app
    from flask_mcp.cli import cli

    block = next(
        code
        for info, code in fenced(section(page("cli.md"), "Looking at a server and calling it"))
        if info.strip() == "console"
    )
    commands = re.split(r"^\$ flask --app examples\.quickstart mcp ", block, flags=re.MULTILINE)
    assert len(commands) == 6
    for command in commands[1:]:
        line, *shown = command.splitlines()
        result = app.test_cli_runner().invoke(cli, args=shlex.split(line))
        assert result.exit_code == 0, (line, result.output)
        printed = result.output.splitlines()
        for want in shown:
            want = want.split("<- stderr", 1)[0].rstrip()
            if want.strip() != "...":
                assert want in printed, (line, want, printed)


# -- building the docs -------------------------------------------------------------------------


def test_readme_docs_build_installs_what_the_api_reference_imports() -> None:
    """The README once built the docs after ``pip install -e ".[docs]"`` alone: autodoc
    then fails to import the JWT authorizer, ``flask_mcp.client`` and the authorization
    server, and ``-W`` fails the build. Its command installs their packages."""
    import configparser

    readme = (ROOT / "README.md").read_text()
    command = re.search(r'^pip install -e "\.\[([\w,-]+)\]" && python -m sphinx -W', readme, re.M)
    assert command, "the README no longer gives the docs build command"
    extras = configparser.ConfigParser()
    extras.read(ROOT / "setup.cfg")
    wanted = set()
    for extra in command[1].split(","):
        for line in extras["options.extras_require"][extra].splitlines():
            wanted.add(re.split(r"[\[<>=;! ]", line.strip(), maxsplit=1)[0].lower())
    assert {"sphinx", "authlib", "pyjwt", "mcp"} <= wanted
    api = page("api.rst")
    for module in ("flask_mcp.auth.jwt_authorizer", "flask_mcp.client", "contrib.oauth_server"):
        assert module in api  # what needs them: drop one here when the reference drops it


# -- the examples' entry points ------------------------------------------------------------------


def test_examples_readme_names_each_modules_app_and_factory() -> None:
    """examples/README.md once said every example but one has an ``app`` and a
    ``create_app()``, docs/examples.md every one: ``oauth`` and ``authorization_server``
    have only the factory and ``tasks`` only the app."""
    import importlib

    intros = [
        " ".join(path.read_text().split("\n\n", 2)[1].split())
        for path in (ROOT / "examples" / "README.md", DOCS / "examples.md")
    ]
    for intro in intros:
        sentence = intro.split("All but", 1)[1]
        factories_only = set(re.findall(r"`(\w+)`", sentence.split("(factories only", 1)[0]))
        apps_only = set(re.findall(r"`(\w+)` \(an `app` only\)", sentence))
        assert factories_only == {"authorization_server", "oauth"} and apps_only == {"tasks"}
    for path in sorted((ROOT / "examples").glob("*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"examples.{path.stem}")
        assert hasattr(module, "app") == (path.stem not in factories_only), path.stem
        assert hasattr(module, "create_app") == (path.stem not in apps_only), path.stem


# -- the fast tests ----------------------------------------------------------------------------


def test_readme_fast_test_selection_leaves_out_every_slow_marker() -> None:
    """The README once said ``-m "not e2e"`` runs only the fast tests: it still selects
    the tests marked ``redis`` and ``cluster`` (which start Redis servers), ``conformance``
    (which installs the Node suites) and ``slow`` (the benchmark card's servers). Every
    selection the README calls fast leaves out each of these markers (and ``browser``,
    whose tests are ``e2e`` too)."""
    from _pytest.mark.expression import Expression

    readme = (ROOT / "README.md").read_text()
    fast = re.findall(r'-m "([^"]+)"`\s+(?:runs only the fast|\(fast)', readme)
    assert len(fast) == 2
    for expression in set(fast):
        compiled = Expression.compile(expression)
        implied = {"cluster": "redis", "browser": "e2e"}  # as the tests mark them
        for marker in ("e2e", "slow", "redis", "cluster", "conformance", "browser"):
            marks = {marker, implied.get(marker, marker)}
            assert not compiled.evaluate(lambda name, marks=marks: name in marks), (
                expression,
                marker,
            )


def test_tasks_page_declares_the_deploy_tool_of_its_example() -> None:
    """docs/tasks.md says its ``deploy`` is ``examples/tasks.py`` and that the Python client
    example gets "api: deployed and live" from it: the page's tool must answer the same."""
    from flask_mcp.testing import MCPTestClient

    text = page("tasks.md").split("## Declaring a task tool\n", 1)[1]
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, t.Any] = {"__name__": "docs_tasks"}
    exec(compile(code, "docs/tasks.md", "exec"), namespace)
    app = Flask("docs_tasks")
    namespace["mcp"].init_app(app)
    for go, said in (
        (True, "api: deployed and live"),
        (False, "api: deployed, traffic not switched"),
    ):
        answer = {"action": "accept", "content": {"go": go}}
        with MCPTestClient(app, elicitation=lambda params, answer=answer: answer) as client:
            result = client.call_tool("deploy", {"service": "api", "steps": 1})
        assert result["content"][0]["text"] == said
