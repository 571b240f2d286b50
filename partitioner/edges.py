"""The streaming edge interface between inputs (readers, generators, arrays) and the writer.

Every input becomes an :class:`EdgeSource`: metadata plus a function that yields the edges
as :class:`EdgeChunk` batches. The writer may iterate a source more than once, so
``chunks()`` must start over on every call and yield the same edges each time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

#: Edges per chunk that readers and generators aim for: large enough to amortise Python
#: overhead, small enough (about 80 MB with weights) to stay far below any memory budget.
DEFAULT_CHUNK_EDGES = 1 << 22


@dataclass
class EdgeChunk:
    """A batch of directed edges ``src[i] -> dst[i]`` in the input's own id space.

    ``src`` and ``dst`` are int64 and non-negative; ``weight`` is float32 (finite and
    non-negative, checked by the reader with file and line) or None when unweighted.
    """

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray | None = None
    input_bytes: int = 0  #: bytes of the input file read for this chunk (for progress)

    def __len__(self) -> int:
        return len(self.src)


@dataclass
class EdgeSource:
    """An input graph as a re-iterable stream of edge chunks.

    Attributes:
        chunks: returns a fresh iterator over all edges each time it is called.
        weighted: whether chunks carry weights.
        num_vertices: known vertex count (Matrix Market header, generators, scipy shape),
            or None to infer it from the ids (and relabel if they are sparse).
        symmetric: the source already yields both directions of every edge (Matrix
            Market ``symmetric``, undirected generators), so the store is symmetric
            without ``--symmetrize``.
        num_edges_hint: expected edge count for progress bars, or None.
        input_size: the input file's size in bytes when its chunks count the bytes read
            (``EdgeChunk.input_bytes``): the reading bar's total then. None otherwise.
        provenance: facts about where the edges came from, stored in the store's attrs.
    """

    chunks: Callable[[], Iterator[EdgeChunk]]
    weighted: bool
    num_vertices: int | None = None
    symmetric: bool = False
    num_edges_hint: int | None = None
    input_size: int | None = None
    provenance: dict = field(default_factory=dict)
