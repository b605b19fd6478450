"""Run options shared by every benchmark: quick or full mode, cores, durations."""

from __future__ import annotations

import dataclasses
import os
import shutil


@dataclasses.dataclass
class Options:
    """What a run measures and for how long.

    :param mode: ``quick`` (minutes, for checking the harness and noisy
        machines) or ``full`` (the figures for the record).
    :param server_core: CPU list the servers are pinned to (``taskset -c``).
    :param client_core: CPU list wrk and the Python clients are pinned to.
    :param seconds: length of one measured wrk run.
    :param warmup: length of the unmeasured wrk run each server gets first.
    :param rounds: measured runs per (target, concurrency), interleaved; the median is kept.
    :param concurrency: wrk connection counts.
    :param streams: idle GET streams held open by the stream-capacity benchmark.
    :param heartbeat: ``FLASK_MCP_SSE_HEARTBEAT`` of the stream-capacity benchmark.
    :param memory_calls: calls of the memory-flatness run.
    :param proto: directories holding patched copies of the ``flask_mcp``
        package, each measured side by side with the repository's as
        ``flask_mcp-<directory name>``.
    :param only: run only targets whose label contains one of these.
    :param json_path: where to write every figure as JSON.
    """

    mode: str = "quick"
    server_core: str | None = "0"
    client_core: str | None = "1"
    seconds: float = 5.0
    warmup: float = 2.0
    rounds: int = 1
    concurrency: tuple[int, ...] = (1, 16, 64)
    streams: int = 1000
    heartbeat: float = 2.0
    memory_calls: int = 100_000
    proto: tuple[str, ...] = ()
    only: tuple[str, ...] = ()
    json_path: str | None = None

    @classmethod
    def for_mode(cls, mode: str, **overrides: object) -> Options:
        """Return the defaults of ``quick`` or ``full`` mode with ``overrides`` (``None``: kept)."""
        base = cls(mode=mode)
        if mode == "full":
            base = cls(
                mode=mode,
                seconds=15.0,
                warmup=5.0,
                rounds=3,
                streams=10_000,
                heartbeat=5.0,
                memory_calls=1_000_000,
            )
        for key, value in overrides.items():
            if value is not None:
                setattr(base, key, value)
        if (os.cpu_count() or 1) < 2 or shutil.which("taskset") is None:
            base.server_core = base.client_core = None
        return base

    def proto_labels(self) -> list[tuple[str, str]]:
        """Return ``(label, directory)`` of each patched copy: ``flask_mcp-<directory name>``."""
        return [(f"flask_mcp-{os.path.basename(os.path.normpath(d))}", d) for d in self.proto]

    def wanted(self, label: str) -> bool:
        """Tell whether ``--only`` keeps the target ``label``."""
        return not self.only or any(part in label for part in self.only)

    def pin_self(self) -> None:
        """Pin this process (the Python clients) to the client core."""
        if self.client_core is not None:
            cores = {int(c) for c in self.client_core.split(",")}
            os.sched_setaffinity(0, cores)
