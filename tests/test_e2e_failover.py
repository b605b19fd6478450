"""Redis fails over, and servers restart, under load (issue 33).

Failover: a Sentinel master and a Redis Cluster master. Rolling restarts: gunicorn's
``HUP`` (new workers, the old ones finish) and two gunicorn masters behind a small
round-robin balancer, each stopped and started again in turn.

Real gunicorn workers share a Redis master behind three Sentinels, or a Redis Cluster
with a replica per master; clients of the official ``mcp`` SDK call a tool in loops while
the master is killed (SIGKILL) and its replica promoted. Every call returns or raises
within a bounded time (none is lost), none runs twice, none answered with a JSON-RPC
error ran (its client, told to retry, would run it twice), every result is the call's own,
and calls are answered again on the new master without a restart. The counts are printed
(``pytest -s``): calls sent, answered, errors, lost, duplicated, errors whose tool ran.

Slow (a failover or a restart takes seconds): 20 to 60 s each on an idle machine.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import socket
import tempfile
import threading
import time
import typing as t
import uuid

import anyio
import pytest
from harness import GUNICORN_READY_ARGS
from harness import redis_sentinel
from harness import wait_for_workers_ready
from mcp.shared.exceptions import MCPError
from wire import client
from wire import text_of

pytestmark = [pytest.mark.e2e, pytest.mark.redis, pytest.mark.slow]

APP = "tests._apps.faults:app"
#: Seconds within which every call must return or raise; a hang counts as lost.
HANG = 60


class Counts(t.NamedTuple):
    sent: int
    answered: int
    errors: int
    lost: int
    duplicated: int
    crossed: int  # a result that is not the call's own
    error_texts: list[str]
    refused_opens: int = 0  # sessions refused while opening (no call was sent on them)
    errored_ran: int = 0  # calls answered with an error whose tool ran all the same


def describe(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return exc.message
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (list, tuple)):
        return " | ".join(describe(e) for e in inner)
    return f"{type(exc).__name__}: {exc}"


def calls_under(url: str, marks: str, fault: t.Callable[[], None], clients: int = 6) -> Counts:
    """Run ``clients`` loops of ``mark`` calls (each on its own session, a new one after an
    error); once every loop has been answered once, run ``fault`` in a thread, then keep
    calling until the loops answered again after it; return the counts."""
    sent = answered = errors = lost = crossed = refused_opens = 0
    texts: list[str] = []
    errored: set[str] = set()  # the keys of the calls answered with a JSON-RPC error
    served_after: set[int] = set()
    done_fault = threading.Event()
    started: set[int] = set()

    async def loop(i: int, stop: anyio.Event) -> None:
        nonlocal sent, answered, errors, lost, crossed, refused_opens
        while not stop.is_set():
            call_failed = False
            try:
                async with client(url) as c:
                    while not stop.is_set():
                        key = f"{i}-{uuid.uuid4().hex[:8]}"
                        sent += 1
                        # Until it is answered: a transport failure may surface as the
                        # session's, the call cancelled (not an Exception) on its way out.
                        call_failed = True
                        try:
                            with anyio.fail_after(HANG):
                                result = await c.call_tool("mark", {"key": key, "seconds": 0.3})
                        except TimeoutError:
                            lost += 1
                            raise
                        except MCPError:  # a JSON-RPC error answered it: it must not have run
                            errored.add(key)
                            raise
                        call_failed = False
                        if text_of(result) != key:
                            crossed += 1
                        answered += 1
                        started.add(i)
                        if done_fault.is_set():
                            served_after.add(i)
            except TimeoutError:
                return
            except Exception as exc:  # a JSON-RPC error or a transport failure: an answer
                # Only a call's failure answers a call sent; a session refused while
                # opening (initialize answered 503 while Redis fails over) sent none.
                if call_failed:
                    errors += 1
                else:
                    refused_opens += 1
                texts.append(describe(exc)[:200])
                await anyio.sleep(0.2)

    async def main() -> None:
        stop = anyio.Event()
        with anyio.fail_after(240):
            async with anyio.create_task_group() as group:
                for i in range(clients):
                    group.start_soon(loop, i, stop)
                while len(started) < clients:
                    await anyio.sleep(0.05)
                await anyio.to_thread.run_sync(fault)
                done_fault.set()
                while len(served_after) < clients:
                    await anyio.sleep(0.1)
                await anyio.sleep(1)
                stop.set()

    anyio.run(main)
    with open(marks, encoding="utf-8") as file:
        runs = collections.Counter(line.strip() for line in file if line.strip())
    duplicated = sum(1 for count in runs.values() if count > 1)
    # A call answered with an error must not have run: its client, told to retry, would
    # run it twice (an answer owed by a server that ran it is delivered, not refused).
    errored_ran = sum(1 for key in errored if key in runs)
    return Counts(
        sent, answered, errors, lost, duplicated, crossed, texts, refused_opens, errored_ran
    )


def report(name: str, counts: Counts, seconds: float) -> None:
    kinds = collections.Counter(counts.error_texts)
    print(
        f"{name}: sent {counts.sent}, answered {counts.answered}, errors {counts.errors}, "
        f"lost {counts.lost}, duplicated {counts.duplicated}, sessions refused while opening "
        f"{counts.refused_opens}, errors whose tool ran {counts.errored_ran} ({seconds:.0f}s); "
        f"errors: {dict(kinds.most_common(4))}"
    )


def test_a_sentinel_failover_under_load_loses_and_repeats_no_call(serve: t.Any) -> None:
    """SIGKILL of the master behind three Sentinels while six official clients call: the
    Sentinels promote the replica, the workers follow it (no restart)."""
    started = time.monotonic()
    marks = os.path.join(tempfile.mkdtemp(prefix="flask-mcp-marks-"), "marks")
    with redis_sentinel() as setup:
        prefix = f"sentinel-{uuid.uuid4().hex[:8]}:"
        env = {
            "FLASK_MCP_BACKEND": f"{setup.url}?prefix={prefix}",
            "FLASK_MCP_SSE_RETRY_MS": "500",
            # Each call's stream opens in Redis a heartbeat after the tool started (it runs
            # 0.3 s): some open while the master is down, after their tool ran.
            "FLASK_MCP_SSE_HEARTBEAT": "0.1",
            "FAULTS_MARKS": marks,
        }
        server = serve(APP, "gevent", workers=2, env=env, extra_args=GUNICORN_READY_ARGS)
        wait_for_workers_ready(server, 2)
        promoted: list[int] = []

        def kill_master() -> None:
            before = setup.master_port()
            setup.master.kill()
            setup.master.wait(10)
            promoted.append(setup.wait_for_new_master(before))

        counts = calls_under(server.url, marks, kill_master)
        assert promoted and promoted[0] == setup.ports[1]  # the replica is the master now
        assert server.alive()
        log = server.log()
    report("Sentinel failover (master SIGKILL)", counts, time.monotonic() - started)
    assert counts.lost == 0 and counts.duplicated == 0 and counts.crossed == 0, counts
    assert counts.errored_ran == 0, counts
    assert counts.answered > 0 and counts.sent == counts.answered + counts.errors, counts
    assert "Traceback" not in log, log[-4000:]


def test_the_sentinel_url_reaches_the_master_and_follows_a_failover() -> None:
    """In process: a backend on ``redis+sentinel://`` keeps its sessions across a forced
    failover (SENTINEL FAILOVER), says where it is, and serves the new master."""
    from flask_mcp.backends.base import MESSAGE
    from flask_mcp.backends.base import SessionRecord
    from flask_mcp.backends.redis import RedisBackend
    from flask_mcp.errors import BackendUnavailable

    with redis_sentinel() as setup:
        backend = RedisBackend.from_url(f"{setup.url}?prefix=s-{uuid.uuid4().hex[:6]}:")
        try:
            assert "Sentinels" in backend.where and setup.service in backend.where
            record = SessionRecord(id="s1", protocol_version="2025-11-25")
            assert backend.create_session(record, 10)
            backend.append("s1", "g", MESSAGE, {"jsonrpc": "2.0", "method": "x"})
            setup.fail_over()
            deadline = time.monotonic() + 30
            while True:  # a command or two may meet the demoted master: a 503, then the new one
                try:
                    found = backend.get_session("s1")
                    backend.append("s1", "g", MESSAGE, {"jsonrpc": "2.0", "method": "y"})
                    break
                except BackendUnavailable:
                    assert time.monotonic() < deadline, "the backend never reached the new master"
                    time.sleep(0.2)
            assert found is not None and found.protocol_version == "2025-11-25"
            assert backend.first_seq("s1", "g") == 1
        finally:
            backend.close()


def cluster_ok(cluster: t.Any) -> bool:
    """Whether every node of the cluster still running says ``cluster_state:ok``."""
    import redis

    for port, process in zip(cluster.ports, cluster.processes, strict=True):
        if process.poll() is not None:
            continue
        node = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
        try:
            info = node.execute_command("CLUSTER", "INFO")
            text = info.decode() if isinstance(info, bytes) else str(info)
            if "cluster_state:ok" not in text:
                return False
        except redis.exceptions.RedisError:
            return False
        finally:
            node.close()
    return True


@pytest.mark.cluster
def test_a_cluster_master_failover_under_load_loses_and_repeats_no_call(serve: t.Any) -> None:
    """SIGKILL of the Redis Cluster master holding the keys every worker shares (``{g}``)
    while six official clients call: its replica is promoted, the workers follow it."""
    from harness import redis_client
    from harness import redis_cluster

    started = time.monotonic()
    marks = os.path.join(tempfile.mkdtemp(prefix="flask-mcp-marks-"), "marks")
    with redis_cluster(3, replicas=1, node_timeout=1000) as cluster:
        prefix = f"failover-{uuid.uuid4().hex[:8]}:"
        env = {
            "FLASK_MCP_BACKEND": f"{cluster.url}?prefix={prefix}",
            "FLASK_MCP_SSE_RETRY_MS": "500",
            "FAULTS_MARKS": marks,
        }
        server = serve(APP, "gevent", workers=2, env=env, extra_args=GUNICORN_READY_ARGS)
        wait_for_workers_ready(server, 2)
        store = redis_client(cluster.url)
        victim = store.get_node_from_key(f"{prefix}{{g}}:workers")
        process = cluster.processes[cluster.ports.index(int(victim.port))]
        store.close()

        def kill_master() -> None:
            process.kill()
            process.wait(10)
            deadline = time.monotonic() + 60
            time.sleep(1)
            while not cluster_ok(cluster):
                assert time.monotonic() < deadline, "the cluster did not promote the replica"
                time.sleep(0.2)

        counts = calls_under(server.url, marks, kill_master)
        assert server.alive()
        log = server.log()
    report("Cluster failover (master SIGKILL)", counts, time.monotonic() - started)
    assert counts.lost == 0 and counts.duplicated == 0 and counts.crossed == 0, counts
    assert counts.errored_ran == 0, counts
    assert counts.answered > 0 and counts.sent == counts.answered + counts.errors, counts
    assert "Traceback" not in log, log[-4000:]


def test_the_rate_limiter_counts_in_the_sentinels_master() -> None:
    """``contrib.ratelimit`` with ``MCP_BACKEND = redis+sentinel://...``: its counters live in
    the master the Sentinels name (through the ``limits`` Sentinel storage)."""
    from flask import Flask

    from flask_mcp import MCP
    from flask_mcp.contrib.ratelimit import RateLimiter

    with redis_sentinel() as setup:
        app = Flask(__name__)
        app.config["MCP_BACKEND"] = f"{setup.url}?prefix=rl-{uuid.uuid4().hex[:6]}:"
        mcp = MCP(name="rl", version="1")
        mcp.init_app(app)
        limiter = RateLimiter(mcp, key_prefix=f"t-{uuid.uuid4().hex[:8]}")
        limiter.init_app(app)
        from limits import parse

        storage_limiter = limiter.limiter_for(app)
        rule = parse("2/minute")
        assert storage_limiter.hit(rule, "k") and storage_limiter.hit(rule, "k")
        assert not storage_limiter.hit(rule, "k")  # the third: counted in the master
        import redis

        master = redis.Redis(host="127.0.0.1", port=setup.master_port())
        assert any(b"k" in key for key in master.keys("*"))
        master.close()


# -- rolling restarts --------------------------------------------------------------------


class Balancer:
    """A round-robin TCP balancer on 127.0.0.1: each new connection goes to the next port
    that accepts it (a stopped server is skipped), bytes pumped both ways by threads."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.turn = 0
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=512)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        upstream = None
        for _ in range(2 * len(self.ports)):
            port = self.ports[self.turn % len(self.ports)]
            self.turn += 1
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
                upstream.settimeout(None)
                break
            except OSError:
                time.sleep(0.05)
        if upstream is None:
            conn.close()
            return
        threading.Thread(target=self._pump, args=(upstream, conn), daemon=True).start()
        self._pump(conn, upstream)

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for each in (source, target):
                with contextlib.suppress(OSError):
                    each.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def worker_pids(master: int) -> set[int]:
    import subprocess

    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True, check=False
    ).stdout
    return {int(pid) for pid in out.split()}


def test_a_gunicorn_reload_under_load_loses_and_repeats_no_call(
    serve: t.Any, redis_url: str
) -> None:
    """``HUP`` to the gunicorn master while six official clients call: new workers take
    over, the old ones answer what they run (a result, or the retryable "stopped" error)."""
    started = time.monotonic()
    marks = os.path.join(tempfile.mkdtemp(prefix="flask-mcp-marks-"), "marks")
    env = {
        "FLASK_MCP_BACKEND": f"{redis_url}?prefix=hup-{uuid.uuid4().hex[:8]}:",
        "FLASK_MCP_SSE_RETRY_MS": "500",
        "FAULTS_MARKS": marks,
    }
    server = serve(APP, "gevent", workers=2, env=env, extra_args=GUNICORN_READY_ARGS)
    wait_for_workers_ready(server, 2)
    master = server.process.pid

    def reload() -> None:
        before = worker_pids(master)
        os.kill(master, signal.SIGHUP)
        deadline = time.monotonic() + 60
        while True:  # two new workers, the old ones gone
            now = worker_pids(master)
            if len(now) == 2 and not now & before:
                return
            assert time.monotonic() < deadline, (before, now)
            time.sleep(0.1)

    counts = calls_under(server.url, marks, reload)
    assert server.alive()
    report("gunicorn HUP", counts, time.monotonic() - started)
    assert counts.lost == 0 and counts.duplicated == 0 and counts.crossed == 0, counts
    assert counts.errored_ran == 0, counts
    assert counts.answered > 0 and counts.sent == counts.answered + counts.errors, counts
    assert "Traceback" not in server.log(), server.log_tail(80)


def test_a_gunicorn_binary_upgrade_under_load_loses_and_repeats_no_call(redis_url: str) -> None:
    """``USR2`` to the gunicorn master (a new master and workers on the same socket), then
    ``TERM`` to the old one once the new workers serve, while six official clients call.

    gunicorn runs from its console script here: the harness's ``python -m gunicorn`` cannot
    re-execute itself (the new master would import ``gunicorn/http`` as ``http``).
    """
    import subprocess
    import sys
    import urllib.request

    from harness import free_port

    started = time.monotonic()
    folder = tempfile.mkdtemp(prefix="flask-mcp-usr2-")
    marks, pidfile = os.path.join(folder, "marks"), os.path.join(folder, "gunicorn.pid")
    env = {
        **os.environ,
        "FLASK_MCP_BACKEND": f"{redis_url}?prefix=usr2-{uuid.uuid4().hex[:8]}:",
        "FLASK_MCP_SSE_RETRY_MS": "500",
        "FAULTS_MARKS": marks,
    }
    port = free_port()
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    argv = [gunicorn, "-k", "gevent", "-w", "2", "-b", f"127.0.0.1:{port}", "--pid", pidfile]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    log = open(os.path.join(folder, "gunicorn.log"), "wb")  # noqa: SIM115 - closed below
    old = subprocess.Popen(
        [*argv, APP], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    upgraded: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/debug/fds", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline and old.poll() is None, "gunicorn did not start"
                time.sleep(0.2)

        def upgrade() -> None:
            os.kill(old.pid, signal.SIGUSR2)
            deadline = time.monotonic() + 60
            new = 0
            while not new:  # the new master is a child of the old one, with two workers
                new = next((c for c in worker_pids(old.pid) if len(worker_pids(c)) == 2), 0)
                assert time.monotonic() < deadline, "the new master did not start its workers"
                time.sleep(0.1)
            time.sleep(2)  # its workers load the app and serve
            upgraded.append(new)
            os.kill(old.pid, signal.SIGTERM)  # the old master and its workers finish
            old.wait(60)

        counts = calls_under(f"{base}/mcp", marks, upgrade)
    finally:
        for pid in [old.pid, *upgraded]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGTERM)
        old.wait(30)
        log.close()
    with open(os.path.join(folder, "gunicorn.log"), encoding="utf-8", errors="replace") as f:
        text = f.read()
    assert upgraded and "Handling signal: usr2" in text, text[-3000:]
    report("gunicorn USR2 then TERM to the old master", counts, time.monotonic() - started)
    assert counts.lost == 0 and counts.duplicated == 0 and counts.crossed == 0, counts
    assert counts.errored_ran == 0, counts
    assert counts.answered > 0 and counts.sent == counts.answered + counts.errors, counts
    assert "Traceback" not in text, text[-3000:]


def test_two_servers_restarted_in_turn_behind_a_balancer_lose_no_call(
    serve: t.Any, redis_url: str
) -> None:
    """Two gunicorn masters ("machines") share a Redis behind a round-robin balancer; each
    is stopped (SIGTERM) and started again on its port in turn while six official clients
    call through the balancer: sessions live in Redis, so the other one serves them."""
    started = time.monotonic()
    marks = os.path.join(tempfile.mkdtemp(prefix="flask-mcp-marks-"), "marks")
    env = {
        "FLASK_MCP_BACKEND": f"{redis_url}?prefix=roll-{uuid.uuid4().hex[:8]}:",
        "FLASK_MCP_SSE_RETRY_MS": "500",
        "FAULTS_MARKS": marks,
    }
    servers = [
        serve(APP, "gevent", workers=2, env=env, extra_args=GUNICORN_READY_ARGS) for _ in range(2)
    ]
    for server in servers:
        wait_for_workers_ready(server, 2)
    ports = [server.port for server in servers]
    balancer = Balancer(ports)
    restarted: list[t.Any] = []

    def roll() -> None:
        for i, port in enumerate(ports):
            servers[i].stop(grace=30)
            again = serve(
                APP, "gevent", workers=2, env=env, port=port, extra_args=GUNICORN_READY_ARGS
            )
            wait_for_workers_ready(again, 2)
            restarted.append(again)
            time.sleep(1)  # calls reach the new one before the other stops

    try:
        counts = calls_under(f"http://127.0.0.1:{balancer.port}/mcp", marks, roll)
    finally:
        balancer.close()
    assert len(restarted) == 2 and all(server.alive() for server in restarted)
    report("two masters restarted in turn", counts, time.monotonic() - started)
    assert counts.lost == 0 and counts.duplicated == 0 and counts.crossed == 0, counts
    assert counts.errored_ran == 0, counts
    assert counts.answered > 0 and counts.sent == counts.answered + counts.errors, counts
    for server in [*servers, *restarted]:
        assert "Traceback" not in server.log(), server.log_tail(80)
