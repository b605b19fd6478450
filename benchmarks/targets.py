"""The servers and (server, protocol era) targets of the side-by-side runs."""

from __future__ import annotations

import dataclasses
import importlib.util
import typing as t

from .options import Options
from .servers import ServerSpec

FLASK_MCP_APP = "benchmarks.apps.flask_mcp_app:app"
FLOOR_APP = "benchmarks.apps.floor_app:app"
SDK_APP = "benchmarks.apps.sdk_app:app"


@dataclasses.dataclass(frozen=True)
class Target:
    """One row of a report: a server and the protocol era its requests use.

    :param label: the row name (``flask_mcp/gevent``, ``sdk/json``, ``...@2026``).
    :param server: the :class:`ServerSpec` name.
    :param era: ``handshake`` (2025-11-25 session) or ``2026`` (per-request form).
    """

    label: str
    server: str
    era: str = "handshake"


def sdk_available() -> bool:
    """Tell whether the official ``mcp`` SDK and uvicorn are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("mcp", "uvicorn"))


def flask_mcp(
    worker: str,
    env: t.Mapping[str, str] | None = None,
    *,
    name: str | None = None,
    workers: int = 1,
    threads: int = 8,
    pythonpath: tuple[str, ...] = (),
) -> ServerSpec:
    """Return the spec of the Flask-MCP benchmark app under gunicorn.

    :param threads: threads of a gthread worker.
    """
    return ServerSpec(
        name=name or f"flask_mcp/{worker}",
        kind="flask_mcp",
        runner="gunicorn",
        app=FLASK_MCP_APP,
        worker=worker,
        workers=workers,
        threads=threads,
        env=dict(env or {}),
        pythonpath=pythonpath,
    )


def floor(worker: str, *, fair: bool = False) -> ServerSpec:
    """Return the spec of the bare-Flask floor under gunicorn.

    :param fair: the fair floor (``floor-fair/...``): each call ends by giving the
        other greenlets a turn, as Flask-MCP's do (``BENCH_FLOOR_FAIR``).
    """
    return ServerSpec(
        name=f"floor-fair/{worker}" if fair else f"floor/{worker}",
        kind="floor",
        runner="gunicorn",
        app=FLOOR_APP,
        worker=worker,
        env={"BENCH_FLOOR_FAIR": "1"} if fair else {},
        stateful=False,
    )


def sdk(mode: str) -> ServerSpec:
    """Return the spec of the official SDK server in ``mode`` under uvicorn."""
    return ServerSpec(
        name=f"sdk/{mode}",
        kind="sdk",
        runner="uvicorn",
        app=SDK_APP,
        env={"BENCH_SDK_MODE": mode},
        stateful=mode != "stateless-json",
    )


def throughput_matrix(
    options: Options, with_2026: bool = True
) -> tuple[list[ServerSpec], list[Target]]:
    """Return the servers and targets of the ``tools/call`` throughput benchmark."""
    specs = [flask_mcp("gevent"), flask_mcp("gthread"), floor("gevent"), floor("gthread")]
    for label, directory in options.proto_labels():
        specs.append(flask_mcp("gevent", name=f"{label}/gevent", pythonpath=(directory,)))
    if sdk_available():
        specs += [sdk("default"), sdk("json"), sdk("stateless-json")]
    targets = [Target(spec.name, spec.name) for spec in specs]
    if with_2026:
        targets.append(Target("flask_mcp/gevent@2026", "flask_mcp/gevent", "2026"))
        # the floor does what the same request needs: its headers compared with the body,
        # a result with resultType and serverInfo (benchmarks/apps/floor_app.py)
        targets.append(Target("floor/gevent@2026", "floor/gevent", "2026"))
        for label, _ in options.proto_labels():
            targets.append(Target(f"{label}/gevent@2026", f"{label}/gevent", "2026"))
        if sdk_available():
            targets.append(Target("sdk/stateless-json@2026", "sdk/stateless-json", "2026"))
    targets = [target for target in targets if options.wanted(target.label)]
    needed = {target.server for target in targets}
    return [spec for spec in specs if spec.name in needed], targets
