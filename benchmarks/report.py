"""Plain-text tables, ratios and the target verdicts printed by every benchmark."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import typing as t


def table(headers: t.Sequence[str], rows: t.Iterable[t.Sequence[t.Any]]) -> str:
    """Return a Markdown table (pipe-aligned, so it reads well in a terminal too)."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _cell(value: t.Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    return str(value)


def ratio(a: float | None, b: float | None) -> float | None:
    """Return ``a / b``, or ``None`` when either is missing or ``b`` is zero."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(value: float | None) -> str:
    """Format a ratio as ``0.87x``."""
    return "–" if value is None else f"{value:.2f}x"


@dataclasses.dataclass
class Verdict:
    """One target of the issue: what is asked, what was measured, met or not."""

    target: str
    wanted: str
    measured: str
    met: bool | None  # None: not measured (skipped)

    @property
    def status(self) -> str:
        """``met``, ``NOT met`` or ``skipped``."""
        return "skipped" if self.met is None else ("met" if self.met else "NOT met")


def records(verdicts: t.Iterable[Verdict]) -> list[dict[str, t.Any]]:
    """Return verdicts as the records a benchmark's figures carry under ``"verdicts"``.

    The convention: every benchmark's ``run(options)`` returns a dict, and puts
    ``report.records(found)`` under its ``"verdicts"`` key; ``python -m benchmarks``
    collects them (:func:`collect`) and exits 1 when one failed (:func:`failed`).
    """
    return [dataclasses.asdict(v) | {"status": v.status} for v in verdicts]


def collect(figures: t.Mapping[str, t.Any]) -> list[dict[str, t.Any]]:
    """Return the verdict records of every benchmark in ``figures`` (command name -> figures)."""
    found: list[dict[str, t.Any]] = []
    for value in figures.values():
        if isinstance(value, dict):
            found += value.get("verdicts", [])
    return found


def failed(found: t.Iterable[t.Mapping[str, t.Any]], *, strict: bool) -> list[str]:
    """Return the targets that fail the run: not met, and when ``strict`` also not measured.

    ``strict`` is for a record run (``--full`` without ``--only``): a target
    that could not be measured is not shown met.
    """
    bad = ("NOT met", "skipped") if strict else ("NOT met",)
    return [f"{v['target']} ({v['status']})" for v in found if v["status"] in bad]


def verdict_table(verdicts: t.Sequence[Verdict]) -> str:
    """Return the table of target verdicts."""
    return table(
        ("target", "wanted", "measured", "status"),
        [(v.target, v.wanted, v.measured, v.status) for v in verdicts],
    )


def machine() -> dict[str, t.Any]:
    """Describe the machine and the moment, for the record."""
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "loadavg": [round(x, 2) for x in load],
    }


def banner(title: str) -> str:
    """Return a section title line."""
    return f"\n## {title}\n"


def save_json(path: str | None, data: t.Any) -> None:
    """Write ``data`` as JSON to ``path`` when a path was given."""
    if path:
        with open(path, "w") as handle:
            json.dump(data, handle, indent=2, default=str)


def summary(
    results: t.Mapping[tuple[str, int], t.Any], prepared: t.Iterable[t.Any], rows: t.Any
) -> dict[str, t.Any]:
    """Return the JSON summary of a wrk benchmark: results by label@c, skipped targets, ratios."""
    return {
        "results": {f"{label}@c{c}": r.as_dict() for (label, c), r in results.items()},
        "skipped": {p.target.label: p.skipped for p in prepared if p.skipped},
        "ratios": rows,
    }
