"""What an algorithm module registers (:data:`seraph.algorithms.ALGORITHMS`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from seraph.spec import Algorithm


@dataclass(frozen=True)
class Entry:
    """An algorithm as the API, the CLI, the verifier and the scripts use it.

    ``run(graph, source, **options)`` is the public function (``source`` only where
    :attr:`needs_source`); its result has a ``values`` array (and ``predecessors`` where
    it takes a source). ``verify(graph, values, source, predecessors=None)`` checks an
    answer in O(m) at any size, sharing no code with the engine (None: right; else what
    is wrong, :mod:`seraph.algorithms.verify`). ``reference(graph, source)`` is scipy's
    answer in Seraph's conventions and ``check(graph, values, source)`` compares against
    it, the tests' oracle. ``source`` is the store's vertex number in all three.
    ``summary(values)`` is what the CLI prints of a result.

    ``options`` are the keyword options of its own that ``run`` takes (PageRank's damping,
    ...), which ``verify`` and ``check`` take too; those in ``vertex_options`` name a
    vertex, an input id for ``run`` and a store vertex number for the checks.
    ``source_hint`` says what to use instead of a source, for one that takes none.
    """

    spec: Algorithm
    run: Callable[..., object]
    result_type: type
    reference: Callable[[object, int | None], np.ndarray]
    check: Callable[[object, np.ndarray, int | None], str | None]
    verify: Callable[..., str | None]
    summary: Callable[[np.ndarray], str]
    options: tuple[str, ...] = ()
    vertex_options: tuple[str, ...] = ()
    source_hint: str = ""
    #: ``check_options(**options)`` refuses bad values of :attr:`options` before any work.
    check_options: Callable[..., None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def needs_source(self) -> bool:
        return self.spec.needs_source

    def source_for(self, source: int | None) -> int | None:
        """``source`` if the algorithm takes one, else None: what a caller running every
        algorithm from one vertex passes."""
        return source if self.needs_source else None
