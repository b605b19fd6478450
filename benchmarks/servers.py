"""Start, find and stop the servers under test, pinned to one core, and read their memory."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import typing as t
from pathlib import Path

#: The repository root, put on the servers' ``PYTHONPATH`` so ``benchmarks.apps`` imports.
ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
#: The servers' working directory: empty, because gunicorn and uvicorn put their working
#: directory first on ``sys.path``, where it would shadow a patched copy of ``flask_mcp``
#: given with ``--proto``.
CWD = Path(tempfile.gettempdir()) / "flask-mcp-bench-cwd"


@dataclasses.dataclass(frozen=True)
class ServerSpec:
    """How to run one server under test.

    :param name: the label in reports (``flask_mcp/gevent``).
    :param kind: ``flask_mcp``, ``floor`` or ``sdk``.
    :param runner: ``gunicorn`` or ``uvicorn``.
    :param app: the WSGI/ASGI app as ``module:attribute``.
    :param worker: gunicorn worker class (``gevent``, ``gthread``).
    :param workers: gunicorn worker processes.
    :param threads: threads of a gthread worker.
    :param env: extra environment (``FLASK_MCP_*``, ``BENCH_SDK_MODE``).
    :param pythonpath: directories put first on ``PYTHONPATH`` (a patched package copy).
    :param stateful: whether the server hands out ``Mcp-Session-Id`` (floor: no).
    :param fast_asgi: run uvicorn with uvloop and httptools when they are installed
        (``uvicorn[standard]``), else h11 and asyncio (what ``pip install mcp`` brings).
    """

    name: str
    kind: str
    runner: str
    app: str
    worker: str = "gevent"
    workers: int = 1
    threads: int = 8
    env: t.Mapping[str, str] = dataclasses.field(default_factory=dict)
    pythonpath: tuple[str, ...] = ()
    stateful: bool = True
    fast_asgi: bool = False

    def argv(self, port: int, worker_connections: int) -> list[str]:
        """Return the command line serving on ``port``."""
        if self.runner == "uvicorn":
            return [
                sys.executable,
                "-m",
                "uvicorn",
                self.app,
                "--host",
                HOST,
                "--port",
                str(port),
                "--log-level",
                "warning",
                "--no-access-log",
                "--http",
                _http_impl() if self.fast_asgi else "h11",
                "--loop",
                _loop_impl() if self.fast_asgi else "asyncio",
                "--timeout-keep-alive",
                "75",
                *(["--workers", str(self.workers)] if self.workers > 1 else []),
            ]
        argv = [
            sys.executable,
            "-m",
            "gunicorn",
            "-k",
            self.worker,
            "-w",
            str(self.workers),
            "-b",
            f"{HOST}:{port}",
            "--log-level",
            "warning",
            "--keep-alive",
            "75",
            "--timeout",
            "120",
            "--backlog",
            "4096",
        ]
        if self.worker == "gthread":
            argv += ["--threads", str(self.threads)]
        else:
            argv += ["--worker-connections", str(worker_connections)]
        return [*argv, self.app]


def _http_impl() -> str:
    return "httptools" if importlib.util.find_spec("httptools") else "h11"


def _loop_impl() -> str:
    return "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"


def asgi_stack(spec: ServerSpec) -> str:
    """Describe how uvicorn serves ``spec``: ``httptools+uvloop`` or ``h11+asyncio``."""
    if not spec.fast_asgi:
        return "h11+asyncio"
    return f"{_http_impl()}+{_loop_impl()}"


def free_port() -> int:
    """Return a TCP port free on the loopback interface, never one handed out before.

    The port is closed again until the server binds it, so the kernel may offer it twice
    to servers started together: the second then fails to bind while the first answers
    on its port, and its rows measure the wrong server (its CPU and RSS read 0).
    """
    while True:
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if port not in _handed_out:
            _handed_out.add(port)
            return port


#: The ports :func:`free_port` returned in this process.
_handed_out: set[int] = set()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return sorted(found)


def _listening(pid: int, port: int) -> bool:
    """Tell whether ``pid`` (or a child of it) holds the socket listening on ``port``."""
    inodes = set()
    try:
        with open("/proc/net/tcp") as handle:
            for line in handle.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    except OSError:
        return True  # no /proc: the port accepting connections has to do
    for owner in (pid, *_children(pid)):
        try:
            descriptors = os.listdir(f"/proc/{owner}/fd")
        except OSError:
            continue
        for fd in descriptors:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{owner}/fd/{fd}") in inodes:
                    return True
    return False


def proc_status_kb(pid: int, field: str) -> int:
    """Return a ``kB`` field of ``/proc/PID/status`` (``VmRSS``, ``VmHWM``); 0 if gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def proc_cpu_seconds(pid: int) -> float:
    """Return the CPU time (user + system) a process has used, in seconds; 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """A running server process (gunicorn master and workers, or uvicorn)."""

    def __init__(self, spec: ServerSpec, core: str | None, worker_connections: int = 2000) -> None:
        self.spec = spec
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}/mcp"
        env = dict(os.environ)
        env.update(spec.env)
        env["PYTHONUNBUFFERED"] = "1"
        paths = [*spec.pythonpath, str(ROOT)]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        argv = spec.argv(self.port, worker_connections)
        if core is not None:
            argv = ["taskset", "-c", core, *argv]
        self.log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - lives as long as the server
            prefix=f"bench-{spec.name.replace('/', '_')}-", suffix=".log", delete=False
        )
        CWD.mkdir(exist_ok=True)
        self.process = subprocess.Popen(
            argv,
            cwd=CWD,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the server's own socket listens on its port and every worker exists.

        Its own: a server that lost its port to another started with it would see the
        other's socket accept connections, and exit a moment later.

        :raises RuntimeError: the server exited or never listened.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.spec.name} exited:\n{self.log_text()[-3000:]}")
            if not _listening(self.process.pid, self.port):  # its own socket, not another's
                time.sleep(0.1)
                continue
            try:
                with socket.create_connection((HOST, self.port), timeout=1):
                    pass
            except OSError:
                time.sleep(0.1)
                continue
            if len(self.worker_pids()) >= self.spec.workers:
                return
            time.sleep(0.1)
        raise RuntimeError(
            f"{self.spec.name} did not start in {timeout:g}s:\n{self.log_text()[-3000:]}"
        )

    def worker_pids(self) -> list[int]:
        """Return the pids that serve requests (gunicorn's or uvicorn's workers, else uvicorn)."""
        if self.spec.runner == "gunicorn" or self.spec.workers > 1:
            return _children(self.process.pid)
        return [self.process.pid]

    def rss_kb(self) -> int:
        """Return the summed ``VmRSS`` of the workers, in kB."""
        return sum(proc_status_kb(pid, "VmRSS") for pid in self.worker_pids())

    def cpu_seconds(self) -> float:
        """Return the CPU time the workers have used so far, in seconds."""
        return sum(proc_cpu_seconds(pid) for pid in self.worker_pids())

    def hwm_kb(self) -> int:
        """Return the largest ``VmHWM`` (peak RSS) of the workers, in kB."""
        return max((proc_status_kb(pid, "VmHWM") for pid in self.worker_pids()), default=0)

    def imported_from(self) -> str | None:
        """Return where the Flask-MCP app imported ``flask_mcp`` from, as it logged it."""
        for line in self.log_text().splitlines():
            if "flask_mcp imported from " in line:
                return line.split("flask_mcp imported from ", 1)[1].strip()
        return None

    def log_text(self) -> str:
        """Return what the server printed so far."""
        try:
            return Path(self.log.name).read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server: SIGTERM to its process, then SIGKILL to its own process group."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        self.log.close()
        if not os.environ.get("BENCH_KEEP_LOGS"):
            Path(self.log.name).unlink(missing_ok=True)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_all(
    specs: t.Sequence[ServerSpec],
    core: str | None,
    worker_connections: int = 2000,
    timeout: float = 30.0,
) -> list[Server]:
    """Start several servers and wait until all are ready; stop them all on failure.

    :param timeout: how long each may take to listen (seconds).
    """
    servers = [Server(spec, core, worker_connections) for spec in specs]
    try:
        for server in servers:
            server.wait_ready(timeout)
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers
