"""``flask mcp``: look at and call the app's MCP server from a terminal, or serve it over stdio.

Registered through the ``flask.commands`` entry point, so every app with
Flask-MCP installed has it::

    flask --app examples.quickstart mcp list
    flask --app examples.quickstart mcp call add a=1 b=2
    flask --app examples.quickstart mcp stdio
    flask --app examples.quickstart mcp install claude-desktop
    flask --app tenants mcp --path /t/acme/mcp call whoami   # MCP_PATH = "/t/<tenant>/mcp"

Every command but ``stdio`` and ``install`` runs in process (no server, no
port) through the same runner as HTTP requests, and exits with status 1 when
the answer is an error. See ``docs/cli.md``.
"""

from __future__ import annotations

import json
import pathlib
import sys
import typing as t

import click
from flask import current_app
from flask.cli import AppGroup
from flask.cli import ScriptInfo

from .. import protocol
from ..transport.path_args import EndpointError
from ..transport.path_args import match_endpoint
from . import install as _install
from . import output
from .arguments import convert_arguments
from .arguments import load_json_object
from .arguments import split_pairs
from .local import ErrorAnswer
from .local import InProcessClient
from .skills import skills_command

if t.TYPE_CHECKING:
    from ..extension import MCP

#: The key of ``click.Context.meta`` holding the ``--path`` of ``flask mcp``.
PATH_KEY = "flask_mcp.path"


@click.group("mcp", cls=AppGroup)
@click.option(
    "--path",
    metavar="PATH",
    # Flask reads FLASK_<GROUP>_<OPTION> variables as options: this one's, FLASK_MCP_PATH,
    # is the app's MCP_PATH through from_prefixed_env(), not the endpoint a command names.
    allow_from_autoenv=False,
    help="The endpoint to serve or call, matched against MCP_PATH: needed when MCP_PATH has "
    "URL variables (/t/acme/mcp for /t/<tenant>/mcp), whose values the handlers get as "
    "ctx.path_args and request.view_args.",
)
@click.pass_context
def cli(ctx: click.Context, path: str | None) -> None:
    """Inspect, call and serve the app's MCP server (Flask-MCP)."""
    ctx.meta[PATH_KEY] = path


KINDS = {
    "tools": ("tools/list", "tools"),
    "resources": ("resources/list", "resources"),
    "templates": ("resources/templates/list", "resourceTemplates"),
    "prompts": ("prompts/list", "prompts"),
}
LOG_LEVELS = click.Choice(protocol.LOG_LEVELS)


def server() -> MCP:
    """The MCP extension of the current app.

    :raises click.ClickException: the app serves no MCP server.
    """
    found = current_app.extensions.get("mcp")
    if found is None:
        raise click.ClickException(
            f"The app {current_app.import_name!r} has no MCP server: create "
            "`mcp = MCP(name=..., version=...)` and call `mcp.init_app(app)` in it."
        )
    return t.cast("MCP", found)


def endpoint_path() -> str | None:
    """The ``--path`` given to ``flask mcp`` (``None`` when none was)."""
    return t.cast("str | None", click.get_current_context().meta.get(PATH_KEY))


def wrong_path(exc: EndpointError) -> click.UsageError:
    """The usage error of a ``--path`` that is missing or names no MCP endpoint."""
    ctx = click.get_current_context()
    return click.UsageError(
        f"{exc} Pass it before the command: flask mcp --path {exc.example} {ctx.info_name} ...",
        ctx,
    )


def in_process_client(
    log_level: str = "info", quiet: bool = False, headers: t.Sequence[tuple[str, str]] = ()
) -> InProcessClient:
    """An in-process client of the current app's server at ``--path``; notifications go
    to stderr; every request's context has ``headers`` (``--header``).

    :raises click.UsageError: ``--path`` is missing while ``MCP_PATH`` has URL
        variables, or names no MCP endpoint.
    """
    try:
        return InProcessClient(
            server(),
            current_app._get_current_object(),  # type: ignore[attr-defined]
            on_message=None if quiet else output.notification,
            log_level=log_level,
            path=endpoint_path(),
            headers=headers,
        )
    except EndpointError as exc:
        raise wrong_path(exc) from None


def _offered(method: str) -> bool:
    return server().registry.offers(method)


def _list(in_process: InProcessClient, kind: str) -> list[dict[str, t.Any]]:
    method, key = KINDS[kind]
    if not _offered(method):
        return []
    try:
        return in_process.list_all(method, key)
    except ErrorAnswer as exc:
        raise click.ClickException(f"{method} failed: {exc}") from None


def _fail(response: dict[str, t.Any]) -> t.NoReturn:
    """Print a JSON-RPC error on stderr and exit with status 1."""
    error = response["error"]
    click.echo(f"Error {error.get('code')}: {error.get('message')}", err=True)
    if error.get("data") is not None:
        click.echo(output.dump(error["data"]), err=True)
    sys.exit(1)


def _header(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> list[tuple[str, str]]:
    """Split each ``--header "Name: value"`` into ``(name, value)``."""
    headers = []
    for value in values:
        name, colon, text = value.partition(":")
        name = name.strip()
        if not colon or not name or any(c.isspace() for c in name):
            raise click.BadParameter(
                f"{value!r} is not a header: write it as 'Name: value'"
                " (--header 'Cookie: session=...').",
                ctx,
                param,
            )
        headers.append((name, text.strip()))
    return headers


_HEADER_OPTION = click.option(
    "--header",
    "headers",
    metavar="'NAME: VALUE'",
    multiple=True,
    callback=_header,
    help="A header of every request (repeatable), as an HTTP client's would be: "
    "--header 'Cookie: session=...' signs in as the app's login does (login_required, "
    "ViewTools' views). MCP authorization (MCP_AUTH_RESOURCE) does not read it.",
)


# -- list, inspect ---------------------------------------------------------------------


@cli.command("list")
@click.argument("kind", required=False, type=click.Choice(list(KINDS)))
@click.option("--json", "as_json", is_flag=True, help="Print the full objects as JSON.")
@_HEADER_OPTION
def list_command(kind: str | None, as_json: bool, headers: list[tuple[str, str]]) -> None:
    """List the server's tools, resources, resource templates and prompts.

    KIND is one of tools, resources, templates, prompts (default: all of them).
    """
    in_process = in_process_client(headers=headers)
    kinds = [kind] if kind else list(KINDS)
    found = {name: _list(in_process, name) for name in kinds}
    if as_json:
        click.echo(output.dump(found[kind] if kind else found))
        return
    for index, name in enumerate(kinds):
        if not kind:
            click.echo(("\n" if index else "") + f"{name.capitalize()}:")
        rows = []
        for item in found[name]:
            label = item.get("uri") or item.get("uriTemplate") or item.get("name", "")
            if name == "prompts" and item.get("arguments"):
                label += " " + " ".join(
                    f"{a['name']}=..." if a.get("required") else f"[{a['name']}=...]"
                    for a in item["arguments"]
                )
            rows.append((label, output.first_line(item.get("title") or item.get("description"))))
        click.echo(output.table(rows))


@cli.command("inspect")
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON object.")
@_HEADER_OPTION
def inspect_command(as_json: bool, headers: list[tuple[str, str]]) -> None:
    """Show the server's info, capabilities and every schema."""
    mcp = server()
    in_process = in_process_client(headers=headers)
    version = protocol.LATEST_HANDSHAKE_VERSION
    document: dict[str, t.Any] = {
        "serverInfo": protocol.server_info_fields(version, mcp.server_info),
        "protocolVersions": [*protocol.STATELESS_VERSIONS, *protocol.HANDSHAKE_VERSIONS],
        "capabilities": mcp.capabilities(),
    }
    if mcp.instructions:
        document["instructions"] = mcp.instructions
    for name, (_, key) in KINDS.items():
        document[key] = _list(in_process, name)
    if as_json:
        click.echo(output.dump(document))
        return
    info = document["serverInfo"]
    title = f" ({info['title']})" if info.get("title") else ""
    click.echo(f"{info['name']} {info['version']}{title}")
    click.echo(f"Protocol versions: {', '.join(document['protocolVersions'])}")
    if mcp.instructions:
        click.echo(f"Instructions: {mcp.instructions}")
    click.echo("Capabilities:")
    click.echo(output.schema_lines(document["capabilities"], "  "))
    for tool in document["tools"]:
        click.echo(f"\nTool {tool['name']}: {output.first_line(tool.get('description'))}")
        click.echo("  input schema:")
        click.echo(output.schema_lines(tool.get("inputSchema", {})))
        if "outputSchema" in tool:
            click.echo("  output schema:")
            click.echo(output.schema_lines(tool["outputSchema"]))
        if tool.get("annotations"):
            click.echo(f"  annotations: {json.dumps(tool['annotations'])}")
    for resource in document["resources"]:
        mime = f" [{resource['mimeType']}]" if resource.get("mimeType") else ""
        click.echo(f"\nResource {resource['uri']}{mime}: {resource.get('name', '')}")
    for template in document["resourceTemplates"]:
        mime = f" [{template['mimeType']}]" if template.get("mimeType") else ""
        click.echo(f"\nTemplate {template['uriTemplate']}{mime}: {template.get('name', '')}")
    for prompt in document["prompts"]:
        click.echo(f"\nPrompt {prompt['name']}: {output.first_line(prompt.get('description'))}")
        for argument in prompt.get("arguments") or []:
            need = "required" if argument.get("required") else "optional"
            text = output.first_line(argument.get("description"))
            click.echo(f"  {argument['name']} ({need}) {text}".rstrip())


# -- call, read, prompt ------------------------------------------------------------------

_LOG_OPTION = click.option(
    "--log-level",
    type=LOG_LEVELS,
    default="info",
    show_default=True,
    help="The lowest level of the handler's log messages to print on stderr.",
)


@cli.command("call", context_settings={"ignore_unknown_options": True})
@click.argument("tool")
@click.argument("arguments", nargs=-1)
@click.option("--json", "json_arguments", metavar="OBJECT", help="Arguments as a JSON object.")
@click.option("--raw", is_flag=True, help="Print the whole result as JSON.")
@_LOG_OPTION
@_HEADER_OPTION
def call_command(
    tool: str,
    arguments: tuple[str, ...],
    json_arguments: str | None,
    raw: bool,
    log_level: str,
    headers: list[tuple[str, str]],
) -> None:
    """Call TOOL with ARGUMENTS written as name=value.

    Values are converted with the tool's input schema: numbers, true/false,
    JSON for objects and arrays. Exit status 1 when the tool fails.
    """
    mcp = server()
    record = mcp.registry.tools.get(tool)
    if record is None:
        known = ", ".join(sorted(mcp.registry.tools)) or "none"
        raise click.UsageError(f"No tool named {tool!r}. Tools: {known}.")
    in_process = in_process_client(log_level, headers=headers)
    schema: dict[str, t.Any] = next(
        (
            item.get("inputSchema", {})
            for item in _list(in_process, "tools")
            if item["name"] == tool
        ),
        {},
    )
    values = convert_arguments(
        schema,
        arguments,
        what=f"tool {tool!r}",
        base=load_json_object(json_arguments, "--json"),
    )
    response = in_process.request("tools/call", {"name": tool, "arguments": values})
    if "error" in response:
        _fail(response)
    result = response["result"]
    text = output.dump(result) if raw else output.tool_result(result)
    if result.get("isError"):
        click.echo(text, err=True)
        sys.exit(1)
    click.echo(text)


@cli.command("read")
@click.argument("uri")
@click.option("--raw", is_flag=True, help="Print the whole result as JSON.")
@_LOG_OPTION
@_HEADER_OPTION
def read_command(uri: str, raw: bool, log_level: str, headers: list[tuple[str, str]]) -> None:
    """Read the resource at URI (a resource's, or one a template matches)."""
    in_process = in_process_client(log_level, headers=headers)
    response = in_process.request("resources/read", {"uri": uri})
    if "error" in response:
        _fail(response)
    result = response["result"]
    if raw:
        click.echo(output.dump(result))
        return
    click.echo("\n".join(output.contents_text(item) for item in result.get("contents") or []))


@cli.command("prompt", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("arguments", nargs=-1)
@click.option("--raw", is_flag=True, help="Print the whole result as JSON.")
@_LOG_OPTION
@_HEADER_OPTION
def prompt_command(
    name: str,
    arguments: tuple[str, ...],
    raw: bool,
    log_level: str,
    headers: list[tuple[str, str]],
) -> None:
    """Get prompt NAME with ARGUMENTS written as name=value."""
    mcp = server()
    record = mcp.registry.prompts.get(name)
    if record is None:
        known = ", ".join(sorted(mcp.registry.prompts)) or "none"
        raise click.UsageError(f"No prompt named {name!r}. Prompts: {known}.")
    in_process = in_process_client(log_level, headers=headers)
    declared = next(
        (
            item.get("arguments") or []
            for item in _list(in_process, "prompts")
            if item["name"] == name
        ),
        [],
    )
    values = split_pairs(arguments, f"prompt {name!r}")
    names = [argument["name"] for argument in declared]
    for key in values:
        if key not in names:
            raise click.UsageError(
                f"Unknown argument {key!r} for prompt {name!r}; it takes: "
                f"{', '.join(names) or 'no arguments'}."
            )
    missing = [a["name"] for a in declared if a.get("required") and a["name"] not in values]
    if missing:
        raise click.UsageError(
            f"Missing argument {', '.join(map(repr, missing))} of prompt {name!r}: add "
            + " ".join(f"{m}=VALUE" for m in missing)
            + "."
        )
    response = in_process.request("prompts/get", {"name": name, "arguments": values})
    if "error" in response:
        _fail(response)
    result = response["result"]
    click.echo(output.dump(result) if raw else output.prompt_result(result))


# -- stdio ---------------------------------------------------------------------------------


@cli.command("stdio", with_appcontext=False)
@click.pass_context
def stdio_command(ctx: click.Context) -> None:
    """Serve the MCP server on stdin and stdout, for a client that starts it (both eras).

    Nothing but JSON-RPC messages is written to stdout; prints and logs go to
    stderr, from the app's import on. It stops when stdin closes. With URL variables
    in MCP_PATH, name the endpoint served: flask mcp --path /t/acme/mcp stdio.
    """
    from ..transport.stdio import protect_stdout
    from ..transport.stdio import serve_stdio

    stdout = protect_stdout()  # before the app is imported: its prints go to stderr too
    app = ctx.ensure_object(ScriptInfo).load_app()
    with app.app_context():
        mcp = server()
        try:
            serve_stdio(
                mcp.dispatcher,
                mcp.state(app),
                mcp.roots_changed_hooks,
                stdout=stdout,
                path=endpoint_path(),
            )
        except EndpointError as exc:  # raised before a line is read
            raise wrong_path(exc) from None


# -- install -------------------------------------------------------------------------------


@cli.command("install")
@click.argument("client_name", metavar="CLIENT", type=click.Choice(list(_install.CLIENTS)))
@click.option("--name", help="The entry's name (default: the server's name).")
@click.option(
    "--env",
    "env_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An environment variable for the server; repeat for more. Never written into a "
    "file of the project: see --env-file and --scope.",
)
@click.option(
    "--env-file",
    "env_file",
    type=click.Path(dir_okay=False, path_type=pathlib.Path),
    help="Keep the --env values in this dotenv file (mode 0600 when new); the entry "
    "names it and flask loads it when the server starts (needs python-dotenv).",
)
@click.option(
    "--scope",
    type=click.Choice(_install.SCOPES),
    help="claude-code only: project (.mcp.json, the default), local or user (~/.claude.json).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=pathlib.Path),
    help="The client's config file (default: where the client reads it).",
)
@click.option("--print", "print_only", is_flag=True, help="Print the entry; write nothing.")
@click.pass_context
def install_command(
    ctx: click.Context,
    client_name: str,
    name: str | None,
    env_pairs: tuple[str, ...],
    env_file: pathlib.Path | None,
    scope: str | None,
    config_path: pathlib.Path | None,
    print_only: bool,
) -> None:
    """Add the server to a desktop client's config: it starts `flask --app ... mcp stdio`.

    CLIENT is claude-desktop, cursor, claude-code (the project's .mcp.json, or
    ~/.claude.json with --scope local/user) or vscode (the workspace's
    .vscode/mcp.json). Other entries of the file are kept; an entry of the same
    name is replaced. --env values are never written into a file of the project.
    The --path of `flask mcp --path PATH install` goes into the entry: the client
    starts `flask --app ... mcp --path PATH stdio`.
    """
    kind = _install.CLIENTS[client_name]
    info = ctx.find_object(ScriptInfo)
    app_path = info.app_import_path if info is not None else None
    if not app_path:
        raise click.UsageError(
            "Name the app with `flask --app MODULE mcp install ...` (or FLASK_APP), so the "
            "client can start it."
        )
    mcp = server()
    path = endpoint_path()
    try:  # checked now: the client would start a server that refuses it
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        match_endpoint(app, mcp.state(app).settings.path, path)
    except EndpointError as exc:
        raise wrong_path(exc) from None
    entry_name = name or mcp.name
    env = _install.parse_env(env_pairs)
    cwd = pathlib.Path.cwd()
    where = _install.target(kind, scope, config_path, cwd)
    if env_file is not None:
        env_file = env_file.absolute()
        if not env and not env_file.exists():
            raise click.UsageError(
                f"--env-file {env_file} does not exist: give the values with --env KEY=VALUE "
                "and install writes them there."
            )
    elif env and where.shared and not print_only:
        _install.refuse_secrets(where, kind, env)
    entry_env = {} if env_file is not None else env
    entry = _install.entry(kind, app_path, entry_env, str(cwd), env_file, path)
    if print_only:
        shown = _install.masked(entry, entry_env)
        if kind.name == "claude-code":
            click.echo(_install.claude_code_command(entry_name, shown, scope or "project"))
        else:
            click.echo(output.dump({kind.servers_key: {entry_name: shown}}))
        if entry_env:
            click.echo(
                f"The --env values are hidden ({_install.MASK}): put yours in their place, "
                "or keep them in a file with --env-file PATH.",
                err=True,
            )
        if env_file is not None and env:
            click.echo(f"{env_file} was not written (--print writes nothing).", err=True)
        return
    if env_file is not None and env:
        written_env = _install.write_env_file(env_file, env)
        click.echo(f"Wrote {', '.join(sorted(env))} to {_describe(env_file, written_env)}.")
    replaced, written = _install.install(where, entry_name, entry)
    done = "Replaced" if replaced else "Added"
    click.echo(f"{done} {entry_name!r} in {_describe(where.path, written)}.")
    click.echo(f"Restart {kind.title} to load it.")


def _describe(path: pathlib.Path, written: pathlib.Path) -> str:
    """``path``, and the file written when it is a symlink to another."""
    return str(path) if path.absolute() == written else f"{path} (-> {written})"


# -- check ---------------------------------------------------------------------------------


@cli.command("check", with_appcontext=False)
@click.pass_context
def check_command(ctx: click.Context) -> None:
    """Check the configuration, the backend and the JWKS; say what to fix.

    Exit status 1 when something needs fixing.
    """
    from flask.cli import NoAppException

    from .checks import run_checks

    info = ctx.ensure_object(ScriptInfo)
    try:
        app = info.load_app()
    except NoAppException:
        raise
    except Exception as exc:  # init_app refused the configuration, or the backend is down
        click.echo(f"FAIL  the app did not start: {type(exc).__name__}: {exc}")
        click.echo("1 problem to fix.", err=True)
        sys.exit(1)
    problems = 0
    with app.app_context():
        for ok, text in run_checks(server(), app, endpoint_path()):
            click.echo(f"{'ok  ' if ok else 'FAIL'}  {text}")
            problems += not ok
    if problems:
        click.echo(f"{problems} problem{'s' if problems > 1 else ''} to fix.", err=True)
        sys.exit(1)
    click.echo("All checks passed.")


cli.add_command(skills_command)

__all__ = ["PATH_KEY", "cli", "endpoint_path", "in_process_client", "wrong_path"]
