"""Greenlets when gevent has patched the process, threads otherwise.

Everything that waits in Flask-MCP goes through this module so that the same
code runs on gunicorn's gevent worker, its gthread worker and the Werkzeug
development server. ``threading`` and ``queue`` primitives are used directly:
under gevent's monkey patching they are already cooperative.
"""

from __future__ import annotations

import _socket
import _thread
import socket
import sys
import threading
import typing as t

from ..errors import RequestCancelled
from ..wakeup import gevent_patched as gevent_active


def native_lock() -> t.Any:
    """Return a lock of the operating system, even in a process gevent has patched.

    For critical sections that never wait nor switch greenlets (a few
    dictionary operations): there it is as safe as gevent's lock, and much
    cheaper. A section that may block must use ``threading.Lock``.
    """
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None:
        return monkey.get_original("_thread", "allocate_lock")()
    return _thread.allocate_lock()


class Task:
    """A unit of work running concurrently with its caller.

    On gevent it is a greenlet that :meth:`kill` interrupts; on threads it is a
    daemon thread, and :meth:`kill` can only ask (the code polls
    ``ctx.cancelled``).
    """

    def __init__(self, fn: t.Callable[[], None]) -> None:
        self._fn = fn
        self._greenlet: t.Any = None
        self._thread: threading.Thread | None = None
        self.done = threading.Event()

    def _run(self) -> None:
        try:
            self._fn()
        except RequestCancelled:
            pass
        finally:
            # The work's closure holds the call, which holds this task's run and
            # its answer: dropped here (as threading.Thread drops its target), a
            # large result is freed when the request ends, not at the next
            # collection of reference cycles.
            del self._fn
            self.done.set()

    def start(self) -> Task:
        """Start the work and return ``self``."""
        if gevent_active():
            import gevent

            self._greenlet = gevent.spawn(self._run)
        else:
            self._thread = threading.Thread(target=self._run, daemon=True, name="mcp-handler")
            self._thread.start()
        return self

    def kill(self) -> None:
        """Interrupt the work: raise :class:`RequestCancelled` in it on gevent."""
        if self._greenlet is not None and not self.done.is_set():
            self._greenlet.kill(RequestCancelled, block=False)

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the work to end; tell whether it did."""
        return self.done.wait(timeout)


class CurrentGreenlet:
    """The running greenlet, as a :class:`Task` that can be interrupted until disarmed.

    Used for handlers that run in the view's own greenlet. The interruption is
    delivered by the hub, which checks :attr:`armed` at that moment, so a kill
    that arrives after the handler returned never reaches the server's code.
    It is built on every inline call, so it holds no Event: :meth:`join` polls.
    """

    __slots__ = ("_greenlet", "_hub", "armed")

    def __init__(self) -> None:
        getcurrent, get_hub = _api or _gevent_api()
        self._greenlet = getcurrent()
        self._hub = get_hub()
        self.armed = True

    def kill(self) -> None:
        """Raise :class:`RequestCancelled` in the greenlet if it is still armed."""
        if not self.armed:
            return

        def throw() -> None:
            if self.armed and not self._greenlet.dead:
                self.armed = False
                self._greenlet.throw(RequestCancelled)

        self._hub.loop.run_callback(throw)

    def disarm(self) -> None:
        """Stop any later :meth:`kill` from reaching the greenlet."""
        self.armed = False

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the work to end; tell whether it did."""
        return _poll(lambda: not self.armed, timeout)


def _poll(done: t.Callable[[], bool], timeout: float | None) -> bool:
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    while not done():
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


_api: tuple[t.Any, t.Any] | None = None


def _gevent_api() -> tuple[t.Any, t.Any]:
    """Return gevent's ``getcurrent`` and ``get_hub``, imported once."""
    global _api
    if _api is None:
        import gevent

        _api = (gevent.getcurrent, gevent.get_hub)
    return _api


class CurrentThread:
    """The running thread, as a :class:`Task`: it cannot be interrupted, only flagged."""

    __slots__ = ("armed",)

    def __init__(self) -> None:
        self.armed = True

    def kill(self) -> None:
        """Threads cannot be interrupted; the run's ``cancelled`` flag is all there is."""

    def disarm(self) -> None:
        """Mark the work as ended."""
        self.armed = False

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the work to end; tell whether it did."""
        return _poll(lambda: not self.armed, timeout)


def current_task() -> CurrentGreenlet | CurrentThread:
    """Return the running greenlet or thread as a task that can be disarmed."""
    return CurrentGreenlet() if gevent_active() else CurrentThread()


def spawn(fn: t.Callable[[], None]) -> Task:
    """Run ``fn`` concurrently and return its :class:`Task`."""
    return Task(fn).start()


def sleep(seconds: float) -> None:
    """Sleep cooperatively."""
    import time

    time.sleep(seconds)


def let_others_run(task: CurrentGreenlet | CurrentThread | None = None) -> None:
    """Give the other greenlets a turn: a view that never blocks would starve them.

    On gevent, a keep-alive connection whose next request is already read is
    served again and again without yielding, and the others' tail latency
    grows. A greenlet that waited for its socket since its last call has let
    the others run already: the hub's loop polled, and its iteration count
    moved on. So with ``task`` (the current greenlet, from :func:`current_task`)
    the yield happens only when the same greenlet comes here twice in one
    iteration of the loop; without it, or on a loop that counts no
    iterations (libuv), every time. OS threads are preempted anyway: there it
    does nothing.
    """
    global _last_turn
    if type(task) is CurrentGreenlet:
        iteration = task._hub.loop.iteration
        if iteration >= 0:
            turn = (id(task._greenlet), iteration)
            if turn != _last_turn:
                _last_turn = turn
                return
    if _gevent_sleep is not None:
        _gevent_sleep(0)
    elif gevent_active():
        _import_gevent_sleep()(0)


#: ``(id(greenlet), loop iteration)`` of the last call of :func:`let_others_run` that did
#: not yield.
_last_turn: tuple[int, int] = (0, -1)
#: gevent's ``sleep`` once a call found gevent active (``time.sleep`` after patching).
_gevent_sleep: t.Callable[[float], None] | None = None


def _import_gevent_sleep() -> t.Callable[[float], None]:
    global _gevent_sleep
    import gevent

    sleep: t.Callable[[float], None] = gevent.sleep
    _gevent_sleep = sleep
    return sleep


def killed(exc: BaseException) -> bool:
    """Tell whether ``exc`` is ``GreenletExit``: the server killed the greenlet it raised in.

    A WSGI server under gevent kills the greenlets of the connections it still
    serves when it stops (gunicorn's gevent worker after ``--graceful-timeout``, on
    ``SIGTERM``, a ``SIGHUP`` reload or ``--max-requests``): nothing else kills one
    that serves a stream.
    """
    greenlet = sys.modules.get("greenlet")
    return greenlet is not None and isinstance(exc, greenlet.GreenletExit)


def is_multithreaded_worker(environ: t.Mapping[str, t.Any]) -> bool:
    """Tell whether the WSGI server serves each connection on a real OS thread."""
    return bool(environ.get("wsgi.multithread")) and not gevent_active()


def _gunicorn_worker() -> t.Any:
    """Return the gunicorn worker object of this process, if any."""
    import signal

    try:
        handler = signal.getsignal(signal.SIGTERM)
    except (ValueError, OSError):
        return None
    worker = getattr(handler, "__self__", None)
    return worker if worker is not None and hasattr(worker, "cfg") else None


def worker_grace() -> float | None:
    """Return the graceful timeout of this process's gunicorn worker if it is stopping.

    gunicorn sets its worker's ``alive`` to false when the worker is told to stop
    (``SIGTERM``, a ``SIGHUP`` reload, ``--max-requests``, a reload on a code change),
    then gives the connections it still serves ``--graceful-timeout`` seconds. A gevent
    worker kills their greenlets then (see :func:`killed`); a gthread worker gives up on
    them, and its process waits at exit for the threads that still serve them. ``None``:
    the worker is not stopping, or this is no gunicorn worker.
    """
    worker = _gunicorn_worker()
    if worker is None or getattr(worker, "alive", True) is not False:
        return None
    grace = getattr(worker.cfg, "graceful_timeout", None)
    return float(grace) if isinstance(grace, (int, float)) else 0.0


def respawned_worker() -> bool:
    """Tell whether this process is a gunicorn worker started after the server's first ones.

    gunicorn's master stops the whole server when a worker fails to boot. The first
    workers should (a Redis that cannot be reached is a setup error, said at once);
    one started later (after a crash, ``max_requests``, a ``SIGHUP`` reload) should
    start anyway when the shared store is down for a moment, and answer 503 until it
    is back. gunicorn numbers its workers in the order it starts them (``age``).
    """
    worker = _gunicorn_worker()
    age = getattr(worker, "age", None)  # None in the master (--preload): not a worker
    return isinstance(age, int) and age > worker.cfg.workers


def waitress_channel(environ: t.Mapping[str, t.Any]) -> t.Any:
    """Return waitress's channel (connection) object of this request, if any.

    waitress shows it only as the owner of the ``waitress.client_disconnected``
    method it puts in every environ.
    """
    return getattr(environ.get("waitress.client_disconnected"), "__self__", None)


def uwsgi_module() -> t.Any:
    """Return uWSGI's embedded ``uwsgi`` module, or ``None`` outside uWSGI."""
    try:
        import uwsgi
    except ImportError:
        return None
    return uwsgi


def uwsgi_chunked(environ: t.Mapping[str, t.Any]) -> bool:
    """Tell whether uWSGI serves a chunked body that its ``wsgi.input`` reads as empty.

    gunicorn, waitress and Werkzeug de-chunk the input and say so with
    ``wsgi.input_terminated``; uWSGI does neither, so Werkzeug's
    ``request.stream`` is empty and only ``uwsgi.chunked_read()`` gives the body.
    """
    return bool(
        environ.get("uwsgi.version")
        and not environ.get("wsgi.input_terminated")
        and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    )


class ChunkedBodyUnread(Exception):
    """uWSGI could not give a chunked body: ``status`` (411 or 400) and why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def read_uwsgi_chunked(environ: t.Mapping[str, t.Any], limit: int) -> bytes:
    """Return a chunked body read with ``uwsgi.chunked_read()``, stopping after ``limit`` bytes
    (where :func:`uwsgi_chunked` says so).

    :raises ChunkedBodyUnread: 411 behind uWSGI's HTTP router without
        ``--http-chunked-input`` (it does not pass the body on); 400 when the
        client stops sending (uWSGI's ``--socket-timeout``) or sends broken chunks.
    """
    uwsgi = uwsgi_module()
    if environ.get("UWSGI_ROUTER") and not uwsgi.opt.get("http-chunked-input"):
        raise ChunkedBodyUnread(
            411,
            "Length Required: uWSGI's HTTP router does not pass a chunked body on; send the "
            "POST with Content-Length, or run the router with --http-chunked-input.",
        )
    parts: list[bytes] = []
    size = 0
    try:
        while size < limit:
            chunk = uwsgi.chunked_read()
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ChunkedBodyUnread(
            400,
            f"Bad Request: the chunked body could not be read ({exc}); send the whole body, "
            "or send it with Content-Length.",
        ) from None
    return b"".join(parts)


#: Peek without blocking where the platform can say so (not on Windows).
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


class PeerSocket:
    """A client connection that the WSGI server owns, lent for liveness checks.

    It has what a check needs (``fileno`` and ``recv``, as in
    :func:`flask_mcp.transport.sse.client_gone`) and never blocks. It never closes
    the descriptor, which stays the server's; :meth:`shutdown` ends the connection
    of a client that reads nothing (see :class:`flask_mcp.runtime.runs.PendingWrites`).

    :param conn: the server's socket, or a file descriptor to borrow.
    """

    __slots__ = ("_conn",)

    def __init__(self, conn: socket.socket | int) -> None:
        self._conn = conn

    def fileno(self) -> int:
        """Return the descriptor (-1 once the server closed its socket)."""
        return self._conn if isinstance(self._conn, int) else self._conn.fileno()

    def recv(self, size: int, flags: int = 0) -> bytes:
        """Read (with ``MSG_PEEK``: peek at) up to ``size`` bytes; ``b""``: the peer closed.

        A read that would block finds the connection open, its data taken by
        another reader (waitress's own loop): that reads as one pending byte.
        """
        flags |= _DONTWAIT
        try:
            if not isinstance(self._conn, int):
                return self._conn.recv(size, flags)
            # _socket's class, not gevent's, which would make the descriptor non-blocking.
            borrowed = _socket.socket(fileno=self._conn)
            try:
                return borrowed.recv(size, flags)
            finally:
                borrowed.detach()
        except (BlockingIOError, InterruptedError):
            return b"\0"

    def shutdown(self, how: int) -> None:
        """Shut the connection down (``socket.SHUT_RDWR``: both ways), leaving the descriptor
        open for the server to close.

        A write of the server's that waits on it fails then (waitress's, which waits for
        its buffers to drain, and uWSGI's).

        :raises OSError: the connection is closed already.
        """
        if not isinstance(self._conn, int):
            self._conn.shutdown(how)
            return
        borrowed = _socket.socket(fileno=self._conn)  # _socket's: see recv
        try:
            borrowed.shutdown(how)
        finally:
            borrowed.detach()


def client_socket(environ: t.Mapping[str, t.Any]) -> t.Any:
    """Return the client's connection of a WSGI request, to check it is still there.

    gunicorn and Werkzeug put the socket in the environ. waitress keeps it on
    its channel (see :func:`waitress_channel`). uWSGI gives the descriptor of
    ``uwsgi.connection_fd()``; behind its ``--http`` router that is the
    router's connection, which closes only once a write to the vanished client
    failed. ``None`` when the server shows no connection: a client that leaves
    is then noticed when a write to it fails.
    """
    sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
    if sock is not None:
        return sock
    channel = waitress_channel(environ)
    if channel is not None:
        sock = getattr(channel, "socket", None)
        return None if sock is None else PeerSocket(sock)
    uwsgi = uwsgi_module() if environ.get("uwsgi.version") else None
    if uwsgi is not None:
        try:
            fd = uwsgi.connection_fd()
        except Exception:  # SystemError outside a request
            return None
        return PeerSocket(fd) if isinstance(fd, int) and fd >= 0 else None
    return None


def server_threads(environ: t.Mapping[str, t.Any]) -> int | None:
    """Return how many threads serve requests in this process, when the server tells.

    Known: gunicorn's gthread worker (``--threads``), waitress (``threads=``, read from
    the request's channel) and uWSGI (``--threads``, its ``uwsgi.cores``).
    """
    worker = _gunicorn_worker()
    threads = getattr(getattr(worker, "cfg", None), "threads", None)
    if threads is None:
        threads = getattr(getattr(waitress_channel(environ), "adj", None), "threads", None)
    if threads is None and environ.get("uwsgi.version"):
        threads = getattr(uwsgi_module(), "cores", None)
    return threads if isinstance(threads, int) and threads > 0 else None


def open_file_share() -> int | None:
    """Return half this process's open-file limit, or ``None`` when it has none."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to read
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return None
    return max(1, soft // 2)


def stream_capacity(environ: t.Mapping[str, t.Any]) -> int | None:
    """Return how many SSE responses this process can hold open at once.

    On gevent a stream takes no thread but one open file (its connection): half the
    process's open-file limit (``ulimit -n``), so that one client, held to its share
    of them (``MCP_STREAM_SHARE_PER_CLIENT``), cannot take every file and lock the
    others out (``None`` when that limit is unlimited). A threaded server (gunicorn's
    gthread worker, waitress, uWSGI with ``--threads``) holds one thread per open
    response and needs one free thread to receive a client's reply, so it can
    hold ``threads - 1``; ``None`` (no limit) when the thread count is unknown.
    A server without threads or greenlets (gunicorn's sync worker) can hold none.
    """
    if gevent_active():
        return open_file_share()
    if not environ.get("wsgi.multithread"):
        return 0
    threads = server_threads(environ)
    return None if threads is None else threads - 1


__all__ = [
    "CurrentGreenlet",
    "CurrentThread",
    "PeerSocket",
    "Task",
    "client_socket",
    "current_task",
    "gevent_active",
    "is_multithreaded_worker",
    "killed",
    "let_others_run",
    "open_file_share",
    "server_threads",
    "sleep",
    "spawn",
    "stream_capacity",
    "uwsgi_module",
    "waitress_channel",
    "worker_grace",
]
