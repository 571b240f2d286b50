"""Picking source vertices for many-source runs (``seraph run --random-sources``, and
benchmarks that time several sources as GAP's ``-n`` trials do)."""

from __future__ import annotations

import numpy as np

from seraph.errors import InputError


def random_sources(graph, k: int, seed: int = 0) -> list[int]:
    """``k`` distinct non-isolated vertices (out- or in-degree above 0), as input ids,
    drawn without replacement; the same ``seed`` gives the same sources, whatever the
    store's vertex order (``--order``). An isolated source would make a run that reaches
    only itself, which times nothing."""
    if k < 1:
        raise InputError(f"the number of random sources must be at least 1, got {k}")
    candidates = np.flatnonzero((graph.out_degrees() > 0) | (graph.in_degrees() > 0))
    if k > len(candidates):
        raise InputError(f"asked for {k} random sources but the graph has only "
                         f"{len(candidates)} non-isolated vertices")
    ids = graph.vertex_ids[candidates]
    if graph.attrs.vertex_order != "input":
        ids = np.sort(ids)  # by input id: every vertex order of a graph draws the same sources
    picked = np.random.default_rng(seed).choice(ids, size=k, replace=False)
    return [int(v) for v in picked]
