"""The algorithms, one module each, and their registry.

Each module (:mod:`~seraph.algorithms.bfs`, :mod:`~seraph.algorithms.cc`,
:mod:`~seraph.algorithms.sssp`, :mod:`~seraph.algorithms.sswp`) holds an algorithm's spec
for the engine (:class:`~seraph.spec.Algorithm`), its result type, its public function,
its O(m) verifier (:mod:`~seraph.algorithms.verify`), an oracle's answer for the tests
(scipy's, or a plain Python one) and what the CLI prints of it, and registers an
:class:`Entry` here. Adding an algorithm means adding a module and its line below
(docs/design.md, "Architecture").
"""

from __future__ import annotations

from seraph.algorithms import bfs, cc, pagerank, sssp, sswp
from seraph.algorithms.entry import Entry
from seraph.errors import ConfigError, InputError
from seraph.spec import Algorithm

#: The registry, in the order the CLI and the benchmarks list them.
ALGORITHMS: dict[str, Entry] = {e.name: e for e in (bfs.ENTRY, cc.ENTRY, sssp.ENTRY,
                                                     sswp.ENTRY, pagerank.ENTRY)}

__all__ = ["ALGORITHMS", "Algorithm", "Entry", "get", "run"]


def get(name: str) -> Entry:
    """The registered algorithm ``name`` (``bfs``, ``cc``, ``sssp``, ``sswp``,
    ``pagerank``)."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ConfigError(f"unknown algorithm {name!r}; expected one of "
                          f"{', '.join(ALGORITHMS)}") from None


def run(graph, algorithm: str, source: int | None = None, **options):
    """Runs the algorithm named ``algorithm`` (see :func:`get`) on ``graph``, from
    ``source`` (an input vertex id) where it takes one; the options are those of its
    function (``predecessors``, ``config`` and :class:`~seraph.scheduler.EngineConfig`'s)."""
    entry = get(algorithm)
    if entry.needs_source:
        return entry.run(graph, source, **options)
    if source is not None:
        hint = f": {entry.source_hint}" if entry.source_hint else ""
        raise InputError(f"{algorithm} takes no source vertex, got source={source!r}{hint}")
    return entry.run(graph, **options)
