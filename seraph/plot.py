"""``seraph plot``: a picture of a run's trace (written by ``seraph run --trace FILE``).

Two steps, so that what is drawn can be tested without matplotlib:
- ``timeline`` (pure) sorts the trace's events into lanes: copy and compute intervals per
  page, and a lane of the sparse rounds (push rounds and bottom-up pulls);
- ``figure`` draws those lanes, the work of each round (updates attempted and those that
  changed a value, as Seraph's paper draws them in its Figure 10) and the weak
  predictor's state counts per round, with matplotlib (the ``plot`` extra).

Drawing goes through the Agg canvas directly rather than pyplot: it needs no display, and
it leaves the backend of a calling program (a notebook, say) alone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seraph.errors import ConfigError, InputError
from seraph.stats import SPARSE_KINDS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Span = tuple[float, float]  # (start, end), seconds from the run's start

COPY_COLOUR = "tab:blue"
COMPUTE_COLOUR = "tab:orange"
SPARSE_COLOUR = "tab:green"
SPARSE_LANE = -1  # the sparse-rounds lane sits below page 0
MAX_LABELLED_LANES = 32  # beyond this, page ticks are thinned out


@dataclass
class Timeline:
    """A trace sorted into lanes. Pages with no event have no lane."""

    copies: dict[int, list[Span]] = field(default_factory=dict)
    computes: dict[int, list[Span]] = field(default_factory=dict)
    sparse_spans: list[Span] = field(default_factory=list)
    predictor_states: list[list[int]] = field(default_factory=list)
    round_log: list[dict[str, Any]] = field(default_factory=list)  # RunStats.round_log
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def pages(self) -> list[int]:
        """The page ids that have a lane, in order."""
        return sorted(self.copies.keys() | self.computes.keys())

    @property
    def end(self) -> float:
        """The end of the last interval (0 for an empty trace)."""
        lanes = [*self.copies.values(), *self.computes.values(), self.sparse_spans]
        return max((end for lane in lanes for _, end in lane), default=0.0)


# -- reading ------------------------------------------------------------------------------
def load_trace(path: str | os.PathLike) -> dict[str, Any]:
    """Reads a trace file; raises InputError when it is missing or is not a trace."""
    path = Path(path)
    hint = "write one with `seraph run ... --trace FILE`"
    if not path.is_file():
        raise InputError(f"{path}: no such trace file ({hint})")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not a trace: it is not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise InputError(f'{path}: not a trace: it has no "events" list ({hint})')
    if not isinstance(data.get("stats", {}), dict):
        raise InputError(f'{path}: not a trace: its "stats" is not an object ({hint})')
    return data


def timeline(trace: dict[str, Any]) -> Timeline:
    """Sorts a trace's events into lanes.

    A compute event sweeps a whole window of pages at once, so its interval goes on the
    lane of each of its pages. Events of kinds this version does not know are ignored, so
    that traces from newer versions still plot."""
    stats = trace.get("stats") or {}
    tl = Timeline(predictor_states=[list(r) for r in stats.get("predictor_states") or []],
                  round_log=list(stats.get("round_log") or []), stats=stats)
    for i, event in enumerate(trace["events"]):
        try:
            _add_event(tl, event)
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"trace event {i} is malformed ({type(e).__name__}: {e}): "
                             f"{event!r:.200}") from None
    return tl


def _add_event(tl: Timeline, event: dict[str, Any]) -> None:
    span = (float(event["start"]), float(event["end"]))
    kind = event["kind"]
    if kind == "copy":
        tl.copies.setdefault(int(event["page"]), []).append(span)
    elif kind == "compute":
        for page in event["pages"]:
            tl.computes.setdefault(int(page), []).append(span)
    elif kind in SPARSE_KINDS:
        tl.sparse_spans.append(span)


# -- drawing ------------------------------------------------------------------------------
def figure(tl: Timeline) -> Figure:
    """The picture: a Gantt-style timeline on top, then the work of each round, then the
    predictor-state counts per round.

    A panel is left out when the trace has nothing for it (no round ran; the weak
    predictor did not run, which the title then says)."""
    new_figure, _ = _matplotlib()
    with_states, with_work = bool(tl.predictor_states), bool(tl.round_log)
    ratios = [3] + [1] * (with_work + with_states)
    fig = new_figure(figsize=(12, 5.5 + 2.5 * (len(ratios) - 1)), layout="constrained")
    axes = fig.subplots(len(ratios), 1, height_ratios=ratios) if len(ratios) > 1 else \
        [fig.subplots()]
    _draw_lanes(axes[0], tl)
    if with_work:
        _draw_work(axes[1], tl.round_log)
    if with_states:
        _draw_states(axes[-1], tl.predictor_states)
    fig.suptitle(_title(tl.stats, with_states))
    return fig


def check_output(output: str | os.PathLike) -> Path:
    """Refuses a picture name matplotlib cannot write (or a missing or read-only folder),
    before any work is done."""
    _, agg_canvas = _matplotlib()
    output = Path(output)
    kinds = agg_canvas.get_supported_filetypes()
    suffix = output.suffix.lstrip(".").lower()
    if suffix not in kinds:
        raise ConfigError(f"-o {output}: use a picture file name ending in "
                          + ", ".join(f".{k}" for k in sorted(kinds)))
    folder = output.parent
    if not folder.is_dir():
        raise ConfigError(f"-o {output}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"-o {output}: the directory {folder} is not writable")
    return output


def save(fig: Figure, output: str | os.PathLike) -> Path:
    """Writes the figure; the format follows the file name (.png, .svg, .pdf, ...)."""
    output = check_output(output)
    fig.savefig(output, dpi=120)
    return output


def plot(trace_path: str | os.PathLike, output: str | os.PathLike) -> tuple[Path, Timeline]:
    """Reads a trace and writes its picture; returns the path written and the lanes."""
    check_output(output)  # a missing extra or a bad name fails before a large trace is read
    tl = timeline(load_trace(trace_path))
    return save(figure(tl), output), tl


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigError(
            "seraph plot needs matplotlib: pip install 'seraph-graph[plot]'") from None
    return Figure, FigureCanvasAgg


def _title(stats: dict[str, Any], with_states: bool) -> str:
    get = stats.get
    wall = get("wall_time")
    wall_text = f"{wall:.3f} s" if isinstance(wall, int | float) else "? s"
    title = (f"{get('algorithm') or '?'} on {get('device') or '?'}, schedule "
             f"{get('schedule') or '?'}, predictor {get('predictor') or '?'}: {wall_text}; "
             f"{get('rounds', '?')} rounds, {get('pages_transferred', '?')} pages moved")
    if not with_states:
        title += "\n(no predictor-state counts: the weak predictor did not run)"
    return title


def _draw_lanes(ax: Axes, tl: Timeline) -> None:
    # Each page lane is split in two halves, copies below and computes above, because a
    # window's next copy runs while its pages are swept and full-height bars would hide
    # one another.
    _bars(ax, tl.copies, -0.4, COPY_COLOUR, "copy (host to device)")
    _bars(ax, tl.computes, 0.0, COMPUTE_COLOUR, "compute (sweep)")
    if tl.sparse_spans:
        _bars(ax, {SPARSE_LANE: tl.sparse_spans}, -0.4, SPARSE_COLOUR,
              "sparse rounds (push, bottom-up)", height=0.8)
    pages = tl.pages
    top = max(pages, default=0)
    bottom = SPARSE_LANE if tl.sparse_spans else min(pages, default=0)
    ax.set_ylim(bottom - 0.6, top + 0.6)
    ax.set_xlim(0, max(tl.end, 1e-6) * 1.01)
    _lane_ticks(ax, pages, bool(tl.sparse_spans))
    ax.set_xlabel("seconds from the start of the run")
    ax.set_ylabel("page")
    ax.grid(axis="x", alpha=0.3)
    if pages or tl.sparse_spans:
        # Outside the axes: the last intervals sit at the right edge, under any inner corner.
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    else:
        ax.text(0.5, 0.5, "the trace has no events", ha="center", va="center",
                transform=ax.transAxes)


def _bars(ax: Axes, lanes: dict[int, list[Span]], offset: float, colour: str, label: str,
          height: float = 0.4) -> None:
    """One collection for all the intervals of a kind: a rectangle per bar is too slow for
    runs with thousands of pages."""
    from matplotlib.collections import PolyCollection

    verts = [[(s, y + offset), (s, y + offset + height), (e, y + offset + height),
              (e, y + offset)]
             for y, spans in lanes.items() for s, e in spans]
    if not verts:
        return
    # The edge keeps intervals shorter than a pixel visible as hairlines.
    ax.add_collection(PolyCollection(verts, facecolors=colour, edgecolors=colour,
                                     linewidths=0.5, label=label))


def _lane_ticks(ax: Axes, pages: list[int], with_sparse: bool) -> None:
    from matplotlib.ticker import MaxNLocator

    if len(pages) <= MAX_LABELLED_LANES:
        ticks = list(pages)
    else:
        lo, hi = pages[0], pages[-1]
        ticks = [int(t) for t in MaxNLocator(nbins=16, integer=True).tick_values(lo, hi)
                 if lo <= t <= hi]
    labels = [str(t) for t in ticks]
    if with_sparse:
        ticks, labels = [SPARSE_LANE, *ticks], ["sparse", *labels]
    ax.set_yticks(ticks, labels)


def _draw_work(ax: Axes, log: list[dict[str, Any]]) -> None:
    """Updates attempted and those that changed a value, one pair of bars per round (a push
    phase's rounds together), on a log scale: the share of wasted attempts per round."""
    rounds = range(1, len(log) + 1)
    for key, colour, label in (("attempted", "tab:gray", "attempted"),
                               ("succeeded", "tab:red", "changed a value")):
        ax.bar(rounds, [max(entry[key], 0) for entry in log], width=0.8, color=colour,
               label=label)
    ax.set_yscale("symlog")
    ax.set_xlim(0.5, len(log) + 0.5)
    ax.set_xlabel("round (dense or bottom-up; a push phase is one bar, marked P)")
    ax.set_ylabel("updates")
    ax.set_title("work per round", fontsize="medium")
    if len(log) <= 64:
        ax.set_xticks(list(rounds), ["P" if entry["kind"] == "push" else str(i)
                                     for i, entry in enumerate(log, 1)], fontsize="small")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")


def _draw_states(ax: Axes, states: list[list[int]]) -> None:
    """Stacked vertex counts per state, one bar per dense round (sparse rounds record none).

    States that no vertex ever held are left out of the bars and the legend."""
    width = max(len(r) for r in states)
    rows = [list(r) + [0] * (width - len(r)) for r in states]
    rounds = range(1, len(rows) + 1)
    below = [0] * len(rows)
    for state in range(width):
        counts = [r[state] for r in rows]
        if not any(counts):
            continue
        ax.bar(rounds, counts, bottom=below, width=1.0, label=f"state {state}",
               edgecolor="white", linewidth=0.3 if len(rows) <= 64 else 0)
        below = [b + c for b, c in zip(below, counts, strict=True)]
    ax.set_xlim(0.5, len(rows) + 0.5)
    ax.set_xlabel("dense round")
    ax.set_ylabel("vertices")
    ax.set_title("weak-predictor states per round", fontsize="medium")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
