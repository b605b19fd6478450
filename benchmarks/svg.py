"""A grouped bar chart as a self-contained SVG, written by the benchmarks (no plotting library)."""

from __future__ import annotations

import html
import typing as t
from pathlib import Path

#: One colour per series, readable on white and for common colour blindness (Okabe-Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def _nice_max(value: float) -> float:
    """Return a round axis maximum at or above ``value``."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        top = step * magnitude
        if top >= value:
            return float(top)
    return float(10 * magnitude)


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def bar_chart(
    title: str,
    groups: t.Sequence[str],
    series: t.Sequence[str],
    values: t.Mapping[tuple[str, str], float | None],
    unit: str,
    subtitle: str = "",
) -> str:
    """Return an SVG of ``values[(group, series)]`` as bars, one cluster per group.

    A missing value leaves a gap. Every bar is labelled with its value, so the
    chart reads without hovering, and a legend names the series.
    """
    bar_w, gap, pad_left, pad_top, plot_h = 22, 26, 70, 70, 260
    cluster = bar_w * len(series)
    width = max(640, pad_left + len(groups) * (cluster + gap) + gap + 20)
    legend_rows = (len(series) + 2) // 3
    height = pad_top + plot_h + 60 + 20 * legend_rows
    top = _nice_max(max((v for v in values.values() if v), default=1.0))
    esc = html.escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{pad_left}" y="24" font-size="16" font-weight="bold">{esc(title)}</text>',
        f'<text x="{pad_left}" y="44" fill="#555">{esc(subtitle)}</text>',
    ]
    for i in range(5):
        level = top * i / 4
        y = pad_top + plot_h - plot_h * i / 4
        out.append(
            f'<line x1="{pad_left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        out.append(
            f'<text x="{pad_left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">'
            f"{_number(level)}</text>"
        )
    out.append(
        f'<text x="16" y="{pad_top + plot_h / 2:.0f}" transform="rotate(-90 16 '
        f'{pad_top + plot_h / 2:.0f})" text-anchor="middle" fill="#555">{esc(unit)}</text>'
    )
    for g, group in enumerate(groups):
        x0 = pad_left + gap + g * (cluster + gap)
        for s, name in enumerate(series):
            value = values.get((group, name))
            if not value:
                continue
            h = plot_h * value / top
            x = x0 + s * bar_w
            y = pad_top + plot_h - h
            colour = PALETTE[s % len(PALETTE)]
            out.append(
                f'<rect x="{x}" y="{y:.1f}" width="{bar_w - 3}" height="{h:.1f}" fill="{colour}">'
                f"<title>{esc(name)} {esc(group)}: {_number(value)} {esc(unit)}</title></rect>"
            )
            out.append(
                f'<text x="{x + (bar_w - 3) / 2:.1f}" y="{y - 4:.1f}" font-size="9" '
                f'text-anchor="middle">{_number(value)}</text>'
            )
        out.append(
            f'<text x="{x0 + cluster / 2:.1f}" y="{pad_top + plot_h + 18}" '
            f'text-anchor="middle">{esc(group)}</text>'
        )
    for s, name in enumerate(series):
        lx = pad_left + (s % 3) * 200
        ly = pad_top + plot_h + 44 + (s // 3) * 20
        out.append(
            f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" '
            f'fill="{PALETTE[s % len(PALETTE)]}"/>'
        )
        out.append(f'<text x="{lx + 18}" y="{ly}">{esc(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write(path: str | Path | None, svg: str) -> None:
    """Write ``svg`` to ``path`` (its directory created), when a path is given."""
    if not path:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(svg)
    print(f"chart written to {target}")
