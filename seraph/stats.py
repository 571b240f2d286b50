"""RunStats: what a run did and how long it took, and its trace (docs/design.md, "Rounds
and windows (schedules)")."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field


@dataclass
class RunStats:
    """Counters and timings of one run; every result carries one as ``.stats``."""

    algorithm: str = ""
    device: str = ""
    schedule: str = ""
    predictor: str = ""
    num_vertices: int = 0
    num_edges: int = 0
    num_pages: int = 0
    num_slots: int = 0
    resident: bool = False
    # rounds, sweeps and reentries
    rounds: int = 0
    dense_rounds: int = 0
    sparse_rounds: int = 0  # push rounds and bottom-up rounds
    bottom_up_rounds: int = 0
    sweeps: int = 0
    reentries: int = 0
    rechecks: int = 0
    #: A summing program's (seraph.iterations): the last iteration's change (PageRank's
    #: L1 change), and whether it fell below the tolerance (None: a relaxing program).
    change: float | None = None
    converged: bool | None = None
    # pages and bytes
    pages_transferred: int = 0
    pages_skipped: int = 0
    pages_in_place: int = 0  # page sweeps that read the page in host memory, not copied
    bytes_h2d: int = 0
    bytes_d2h: int = 0
    transfer_time: float = 0.0
    kernel_time: float = 0.0
    sparse_time: float = 0.0  # in sparse rounds: push rounds, bottom-up pulls
    setup_time: float = 0.0  # from the call to the first round: device state, values, plan
    readback_time: float = 0.0  # the values back to the host after the last round
    h2d_bandwidth: float | None = None
    pass_equivalents: float | None = None
    # vertex updates
    updates_attempted: int = 0
    updates_succeeded: int = 0
    skipped_strong: int = 0
    skipped_weak: int = 0
    predictor_states: list[list[int]] = field(default_factory=list)
    # dense/sparse
    switches_to_sparse: int = 0
    switches_to_dense: int = 0
    edges_pushed: int = 0
    #: In-edges of the vertices bottom-up rounds pulled: those rounds read, at most (a
    #: BFS row stops at its first parent, an SSSP row lightest first at its first edge
    #: too heavy to help).
    edges_pulled_bottom_up: int = 0
    edges_swept: int = 0  # in-edges of the pages dense rounds swept (each pass counted)
    #: In-edges the sweeps read, where their kernels count them (a summing program's: the
    #: in-edges of every vertex attempted, none of a skipped one); None where they do not
    #: (a relaxing program's: edges_swept bounds them).
    edges_read: int | None = None
    #: One entry per round, a push phase's rounds together (:meth:`log_round`): where the
    #: work went, round by round, as Seraph's paper draws it (its Figure 10).
    round_log: list[dict] = field(default_factory=list)
    # totals
    wall_time: float = 0.0  # the engine's run, without compile_time
    #: The whole public call (``seraph.bfs(...)`` until it returns: checks, the run, the
    #: result's conversions, predecessors), without compiling: what the user waits for.
    call_time: float = 0.0
    compile_time: float = 0.0  # compiling kernels on a first call (once per install)
    gteps: float = 0.0
    peak_host_memory: int = 0
    peak_device_memory: int = 0
    #: Several workers (docs/design.md, "Many workers"): the time in the exchanges between
    #: rounds (waiting for the other workers included; the largest worker's), the bytes of
    #: values received (all workers'), and each worker's own figures (its pages, edges,
    #: vertices, pages moved, bytes, exchange, peaks), in rank order. The counters above
    #: are the workers' sums, the times and peaks the largest worker's.
    exchange_time: float = 0.0
    exchange_bytes: int = 0
    workers: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def log_round(self, kind: str, rounds: int = 1) -> None:
        """Appends to :attr:`round_log` what the counters gained since the last entry: a
        ``kind`` ("dense", "push", "bottom-up") of ``rounds`` rounds; *attempted* counts
        pulls attempted and, in push rounds, edges relaxed (each an attempted update),
        *edges* the edges read (swept, or read where the sweeps count them, pushed or
        pulled bottom-up)."""
        swept = self.edges_swept if self.edges_read is None else self.edges_read
        now = {"attempted": self.updates_attempted + self.edges_pushed,
               "succeeded": self.updates_succeeded, "skipped_strong": self.skipped_strong,
               "skipped_weak": self.skipped_weak,
               "edges": swept + self.edges_pushed + self.edges_pulled_bottom_up}
        before = self.__dict__.get("_logged") or dict.fromkeys(now, 0)
        self.round_log.append({"kind": kind, "rounds": rounds,
                               **{k: now[k] - before[k] for k in now}})
        self.__dict__["_logged"] = now  # not a field: to_dict leaves it out

    def finish(self, wall_time: float, graph_bytes: int) -> None:
        """Fills the derived figures once the run is over."""
        self.wall_time = wall_time
        self.gteps = self.num_edges / wall_time / 1e9 if wall_time > 0 else 0.0
        if self.transfer_time > 0 and self.bytes_h2d:
            self.h2d_bandwidth = self.bytes_h2d / self.transfer_time
            self.pass_equivalents = wall_time / (graph_bytes / self.h2d_bandwidth)
        self.peak_host_memory = _peak_rss()


def _peak_rss() -> int:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except (ImportError, OSError):
        return 0


#: Trace event kinds of the sparse rounds (the rest are copies and dense sweeps).
SPARSE_KINDS = ("push", "bottom-up")


@dataclass
class Trace:
    """A timeline of copy and compute intervals (seconds from the run's start)."""

    events: list[dict] = field(default_factory=list)
    enabled: bool = False

    def add(self, kind: str, start: float, end: float, **what) -> None:
        if self.enabled:
            self.events.append({"kind": kind, "start": start, "end": end, **what})

    def write(self, path: str | os.PathLike, stats: RunStats) -> None:
        with open(path, "w") as f:
            json.dump({"stats": stats.to_dict(), "events": self.events}, f)
