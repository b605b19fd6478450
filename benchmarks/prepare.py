"""Ready a target for wrk: open its sessions and check one call gives a correct result."""

from __future__ import annotations

import dataclasses

from . import client
from . import wrk
from .servers import Server
from .targets import Target


@dataclasses.dataclass
class Prepared:
    """A target ready for load, or the reason it is skipped."""

    target: Target
    server: Server
    sessions: list[str]
    load: wrk.Load
    skipped: str | None = None

    def drive(self, connections: int, seconds: float, core: str | None) -> wrk.WrkResult:
        """Run wrk on this target with ``connections`` connections, one session each."""
        return wrk.run(
            self.server.url,
            connections=connections,
            seconds=seconds,
            load=self.load,
            sessions=self.sessions[:connections],
            era=self.target.era,
            core=core,
        )


def prepare(target: Target, server: Server, load: wrk.Load, sessions: int) -> Prepared:
    """Open ``sessions`` sessions (handshake era) and probe one call.

    A 2026-07-28 target whose probe is answered with an error, or whose
    result is wrong, is marked skipped: that era may not be implemented yet.
    """
    ids: list[str] = []
    if target.era == "handshake" and server.spec.stateful:
        for _ in range(sessions):
            session_id = client.initialize(server.url)
            if session_id is None:
                break
            ids.append(session_id)
    reply = client.call_tool(
        server.url,
        load.tool,
        dict(load.arguments),
        session_id=ids[0] if ids else None,
        era=target.era,
        request_id=1,
        progress=load.progress,
    )
    problem = client.check_call(reply, 1, load.expect)
    if problem is not None:
        if target.era == "2026":
            return Prepared(target, server, ids, load, skipped=f"2026-07-28 not served: {problem}")
        return Prepared(target, server, ids, load, skipped=f"probe failed: {problem}")
    return Prepared(target, server, ids, load)
