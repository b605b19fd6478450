"""``flask mcp install CLIENT``: the config entry that starts ``flask --app ... mcp stdio``.

Desktop clients start local servers from a JSON file of their own. Each client
here is where its file lives and the shape of its entry; :func:`install` adds
or replaces the one entry named after the server and leaves every other entry,
and every other key of the file, as it was.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shlex
import shutil
import sys
import tempfile
import typing as t

import click


@dataclasses.dataclass(frozen=True)
class ClientKind:
    """A desktop client: where its config file is and how its entries look.

    :param name: the ``install`` argument.
    :param title: the client's name, for messages.
    :param servers_key: the top-level key holding the entries.
    :param typed: whether an entry carries ``"type": "stdio"``.
    :param cwd: whether an entry may carry ``cwd``.
    """

    name: str
    title: str
    servers_key: str
    typed: bool
    cwd: bool

    def default_path(self) -> pathlib.Path:
        """The config file this client reads by default."""
        home = pathlib.Path.home()
        if self.name == "claude-desktop":
            if sys.platform == "darwin":
                return home / "Library/Application Support/Claude/claude_desktop_config.json"
            if sys.platform == "win32":
                appdata = os.environ.get("APPDATA") or str(home / "AppData/Roaming")
                return pathlib.Path(appdata) / "Claude/claude_desktop_config.json"
            config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
            return pathlib.Path(config) / "Claude/claude_desktop_config.json"
        if self.name == "cursor":
            return home / ".cursor/mcp.json"
        if self.name == "vscode":
            return pathlib.Path.cwd() / ".vscode/mcp.json"
        return pathlib.Path.cwd() / ".mcp.json"  # claude-code: the project's shared file


CLIENTS = {
    kind.name: kind
    for kind in (
        ClientKind("claude-desktop", "Claude Desktop", "mcpServers", typed=False, cwd=False),
        ClientKind("cursor", "Cursor", "mcpServers", typed=False, cwd=False),
        ClientKind("claude-code", "Claude Code", "mcpServers", typed=True, cwd=False),
        ClientKind("vscode", "VS Code", "servers", typed=True, cwd=True),
    )
}


def flask_command() -> str:
    """The absolute path of this environment's ``flask`` script (clients run without its PATH)."""
    here = pathlib.Path(sys.executable).parent
    for name in ("flask", "flask.exe"):
        candidate = here / name
        if candidate.exists():
            return str(candidate)
    return shutil.which("flask") or "flask"


def parse_env(pairs: t.Sequence[str]) -> dict[str, str]:
    """Parse ``--env KEY=VALUE`` options.

    :raises click.BadParameter: one has no ``=`` or no key.
    """
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(
                f"{pair!r} is not KEY=VALUE, e.g. --env FLASK_MCP_BACKEND=memory://",
                param_hint="--env",
            )
        env[key] = value
    return env


def entry(kind: ClientKind, app_path: str, env: dict[str, str], cwd: str) -> dict[str, t.Any]:
    """The config entry that starts the app's server over stdio.

    A module path such as ``examples.quickstart`` imports only from the
    project's directory, which a client does not start in: ``PYTHONPATH`` is
    set to it unless ``env`` sets it already (and ``cwd`` too where the client
    takes one).
    """
    server: dict[str, t.Any] = {}
    if kind.typed:
        server["type"] = "stdio"
    server["command"] = flask_command()
    server["args"] = ["--app", app_path, "mcp", "stdio"]
    environment = {"PYTHONPATH": cwd, **env}
    server["env"] = environment
    if kind.cwd:
        server["cwd"] = cwd
    return server


def install(path: pathlib.Path, kind: ClientKind, name: str, server: dict[str, t.Any]) -> bool:
    """Add or replace entry ``name`` in the config file at ``path``; tell whether it replaced one.

    The file is created when missing and rewritten whole through a temporary
    file, so an interrupted write never leaves half a config.

    :raises click.ClickException: the file is not a JSON object, or its
        entries are not an object: it is left alone.
    """
    document: dict[str, t.Any] = {}
    if path.exists():
        text = path.read_text(encoding="utf-8")
        if text.strip():
            try:
                loaded = json.loads(text)
            except json.JSONDecodeError as exc:
                raise click.ClickException(
                    f"{path} is not valid JSON ({exc}); fix or move it, then run install again. "
                    "It was left unchanged."
                ) from None
            if not isinstance(loaded, dict):
                raise click.ClickException(
                    f"{path} does not hold a JSON object; it was left unchanged."
                )
            document = loaded
    servers = document.setdefault(kind.servers_key, {})
    if not isinstance(servers, dict):
        raise click.ClickException(
            f"{path}: {kind.servers_key!r} is not an object; it was left unchanged."
        )
    replaced = name in servers
    servers[name] = server
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2)
            out.write("\n")
        os.replace(temp, path)
    except BaseException:
        pathlib.Path(temp).unlink(missing_ok=True)
        raise
    return replaced


def claude_code_command(name: str, server: dict[str, t.Any]) -> str:
    """The ``claude mcp add`` command that adds the entry to Claude Code."""
    words = ["claude", "mcp", "add", name]
    for key, value in server.get("env", {}).items():
        words += ["--env", f"{key}={value}"]
    words += ["--", server["command"], *server["args"]]
    return shlex.join(words)


__all__ = ["CLIENTS", "ClientKind", "claude_code_command", "entry", "install", "parse_env"]
