"""``flask mcp install CLIENT``: the config entry that starts ``flask --app ... mcp stdio``
(``mcp --path PATH stdio`` for one endpoint of an ``MCP_PATH`` with URL variables).

Desktop clients start local servers from a JSON file of their own. Each client
here is where its file lives and the shape of its entry; :func:`install` adds
or replaces the one entry named after the server and leaves every other entry,
and every other key of the file, as it was. It writes through a symlink and
keeps the file's mode. ``--env`` values (secrets, as far as it knows) never go
into a file that belongs to the project (:func:`refuse_secrets`): they go to an
env file of the user's (:func:`write_env_file`), or to the user's own config.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import os
import pathlib
import shlex
import shutil
import stat
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
    :param project: whether its default file belongs to the project (shared with
        everyone who has the project, and usually committed).
    """

    name: str
    title: str
    servers_key: str
    typed: bool
    cwd: bool
    project: bool = False

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


#: Claude Code's scopes (``claude mcp add --scope``): ``project`` is the project's shared
#: ``.mcp.json``; ``local`` (this project) and ``user`` (every project) live in the
#: user's ``~/.claude.json``.
SCOPES = ("project", "local", "user")


@dataclasses.dataclass(frozen=True)
class Target:
    """Where an entry goes: the file, the keys down to the entries, whether it is shared.

    :param path: the config file as named (a symlink is written through, see
        :func:`write_through`).
    :param keys: the keys of the object that holds the entries, from the top.
    :param shared: whether the file belongs to the project rather than to the user:
        ``--env`` values are never written into it.
    """

    path: pathlib.Path
    keys: tuple[str, ...]
    shared: bool


def target(
    kind: ClientKind, scope: str | None, config: pathlib.Path | None, cwd: pathlib.Path
) -> Target:
    """Where ``install`` writes for ``kind``, ``--scope`` and ``--config``.

    :raises click.UsageError: ``--scope`` for a client other than ``claude-code``.
    """
    if scope is not None and kind.name != "claude-code":
        raise click.UsageError(
            f"--scope is for claude-code only; {kind.title} has one config file "
            "(choose another with --config PATH)."
        )
    if scope in ("local", "user"):
        keys = ("projects", str(cwd), "mcpServers") if scope == "local" else ("mcpServers",)
        if config is None:
            return Target(pathlib.Path.home() / ".claude.json", keys, shared=False)
        return Target(config, keys, shared=in_project(config, cwd))
    if config is None:
        return Target(kind.default_path(), (kind.servers_key,), shared=kind.project)
    return Target(config, (kind.servers_key,), shared=in_project(config, cwd))


def in_project(path: pathlib.Path, cwd: pathlib.Path) -> bool:
    """Whether ``path`` lies in the project (the current directory, unless that is home)."""
    here = cwd.resolve()
    if here == pathlib.Path.home().resolve():
        return False
    return path.resolve().is_relative_to(here)


CLIENTS = {
    kind.name: kind
    for kind in (
        ClientKind("claude-desktop", "Claude Desktop", "mcpServers", typed=False, cwd=False),
        ClientKind("cursor", "Cursor", "mcpServers", typed=False, cwd=False),
        ClientKind("claude-code", "Claude Code", "mcpServers", typed=True, cwd=False, project=True),
        ClientKind("vscode", "VS Code", "servers", typed=True, cwd=True, project=True),
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


def entry(
    kind: ClientKind,
    app_path: str,
    env: dict[str, str],
    cwd: str,
    env_file: pathlib.Path | None = None,
    path: str | None = None,
) -> dict[str, t.Any]:
    """The config entry that starts the app's server over stdio.

    A module path such as ``examples.quickstart`` imports only from the
    project's directory, which a client does not start in: ``PYTHONPATH`` is
    set to it unless ``env`` sets it already (and ``cwd`` too where the client
    takes one). With ``env_file``, ``flask --env-file`` loads it when the
    client starts the server (Flask's option; it needs python-dotenv). With
    ``path``, the server serves that endpoint (``flask mcp --path PATH stdio``).
    """
    server: dict[str, t.Any] = {}
    if kind.typed:
        server["type"] = "stdio"
    server["command"] = flask_command()
    loads = ["--env-file", str(env_file)] if env_file is not None else []
    endpoint = ["--path", path] if path is not None else []
    server["args"] = ["--app", app_path, *loads, "mcp", *endpoint, "stdio"]
    environment = {"PYTHONPATH": cwd, **env}
    server["env"] = environment
    if kind.cwd:
        server["cwd"] = cwd
    return server


def refuse_secrets(where: Target, kind: ClientKind, env: dict[str, str]) -> t.NoReturn:
    """Refuse to write ``--env`` values into a project's shared file, saying what instead.

    :raises click.UsageError: always.
    """
    keys = ", ".join(sorted(env))
    instead = [
        "--env-file PATH: a file only you read (created with mode 0600, keep it out of "
        "version control); the entry names it and flask loads it when the server starts"
    ]
    if kind.name == "claude-code":
        instead.append(
            "--scope local (this project) or --scope user (every project): your own "
            "entry in ~/.claude.json"
        )
    else:
        instead.append("--config PATH: a config file of your own, outside the project")
    raise click.UsageError(
        f"Not writing the --env values ({keys}) into {where.path}: that file belongs to "
        "the project (it is shared, and usually committed). Use instead:\n  " + "\n  ".join(instead)
    )


def write_through(path: pathlib.Path, text: str, new_mode: int) -> pathlib.Path:
    """Write ``text`` to the file at ``path``; return the file written.

    A symlink is followed and its target rewritten (the link stays a link). The
    text goes to a temporary file beside the target, which then replaces it, so an
    interrupted write never leaves half a file; it takes the target's mode (and,
    where this process may set them, owner and group), or ``new_mode`` for a file
    that does not exist yet.
    """
    real = path.resolve()
    real.parent.mkdir(parents=True, exist_ok=True)
    try:
        before: os.stat_result | None = real.stat()
    except FileNotFoundError:
        before = None
    fd, temp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        if before is None:
            os.chmod(temp, new_mode)
        else:
            os.chmod(temp, stat.S_IMODE(before.st_mode))
            if hasattr(os, "chown"):
                with contextlib.suppress(PermissionError):
                    os.chown(temp, before.st_uid, before.st_gid)
        os.replace(temp, real)
    except BaseException:
        pathlib.Path(temp).unlink(missing_ok=True)
        raise
    return real


def new_file_mode(private: bool) -> int:
    """The mode of a new config file: ``0600`` for one of the user's own (it may hold
    secrets), else what the umask gives."""
    if private:
        return 0o600
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def install(where: Target, name: str, server: dict[str, t.Any]) -> tuple[bool, pathlib.Path]:
    """Add or replace entry ``name`` in the config file; tell whether it replaced one,
    and which file was written (a symlink's target).

    The file is created when missing; other entries and other keys are kept.

    :raises click.ClickException: the file cannot be read, is not a JSON object, or
        what should hold the entries is not an object: it is left alone.
    """
    path = where.path
    document: dict[str, t.Any] = {}
    if path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.ClickException(
                f"{path} cannot be read as UTF-8 JSON ({exc}); fix or move it, then run install "
                "again. It was left unchanged."
            ) from None
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
    servers = document
    for key in where.keys:
        servers = servers.setdefault(key, {})
        if not isinstance(servers, dict):
            raise click.ClickException(
                f"{path}: {'.'.join(where.keys)!r} is not an object; it was left unchanged."
            )
    replaced = name in servers
    servers[name] = server
    written = write_through(
        path, json.dumps(document, indent=2) + "\n", new_file_mode(not where.shared)
    )
    return replaced, written


def write_env_file(path: pathlib.Path, env: dict[str, str]) -> pathlib.Path:
    """Set ``env`` in the dotenv file at ``path`` (python-dotenv's ``set_key``); return it.

    Other lines are kept; a symlink is written through; an existing file keeps its
    mode, a new one is created with mode 0600.

    :raises click.UsageError: python-dotenv (1.2.2 or later) is missing, or a value
        holds ``${``, which python-dotenv would expand when it loads the file.
    """
    try:
        import dotenv
    except ImportError:
        raise click.UsageError(
            "--env-file needs python-dotenv (Flask loads the file with it): "
            "pip install 'python-dotenv>=1.2.2'"
        ) from None
    if "follow_symlinks" not in inspect.signature(dotenv.set_key).parameters:
        raise click.UsageError(
            "--env-file needs python-dotenv 1.2.2 or later: pip install -U python-dotenv"
        )
    for key, value in env.items():
        if "${" in value:
            raise click.UsageError(
                f"The value of {key} holds '${{', which python-dotenv expands when it loads "
                "an env file: the server would get another value. Use --scope local/user "
                "(claude-code) or --config PATH with a file of your own instead."
            )
    real = path.resolve()
    if not real.exists():
        real.parent.mkdir(parents=True, exist_ok=True)
        real.touch(mode=0o600)
    for key, value in env.items():
        dotenv.set_key(real, key, value, quote_mode="always", follow_symlinks=True)
    return real


#: What ``--print`` shows in place of an ``--env`` value.
MASK = "********"


def masked(server: dict[str, t.Any], secret_keys: t.Iterable[str]) -> dict[str, t.Any]:
    """A copy of ``server`` with the values of ``secret_keys`` in its ``env`` masked."""
    hidden = set(secret_keys)
    env = {key: MASK if key in hidden else value for key, value in server["env"].items()}
    return {**server, "env": env}


def claude_code_command(name: str, server: dict[str, t.Any], scope: str = "project") -> str:
    """The ``claude mcp add`` command that adds the entry to Claude Code."""
    words = ["claude", "mcp", "add", "--scope", scope, name]
    for key, value in server.get("env", {}).items():
        words += ["--env", f"{key}={value}"]
    words += ["--", server["command"], *server["args"]]
    return shlex.join(words)


__all__ = [
    "CLIENTS",
    "MASK",
    "SCOPES",
    "ClientKind",
    "Target",
    "claude_code_command",
    "entry",
    "in_project",
    "install",
    "masked",
    "new_file_mode",
    "parse_env",
    "refuse_secrets",
    "target",
    "write_env_file",
    "write_through",
]
