"""Push rounds on the host, for any backend whose values can visit host memory: the CPU
backend's, and the CUDA backend's with ``push_on="host"``."""

from __future__ import annotations

import math

import numpy as np

from seraph.backends.base import Backend, PushOutcome
from seraph.backends.caches import (
    graph_cached,
    graph_max_out_degree,
    graph_operands,
    hand_back,
    take_pooled,
)
from seraph.backends.cpu.push import Scratch, push_until, weight_sample


class HostPush(Backend):
    """A backend whose :meth:`push` runs the CPU push engine (:mod:`seraph.backends.cpu.push`)
    on :meth:`~Backend.host_values` and hands the changes back through
    :meth:`~Backend.apply_host_changes`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._scratch: Scratch | None = None

    def push(self, frontier, edge_limit: float, epoch: int) -> PushOutcome:
        graph, alg = self.graph, self.algorithm
        indptr, indices, _weights = graph.csr()
        if self._scratch is None:
            # Filling a new one costs O(n), too much for every round.
            self._scratch = take_pooled(graph, "push_scratch",
                                        lambda: Scratch(graph.num_vertices))
        values = self.host_values()
        weights = graph_operands(graph, alg.op, "csr")
        # Delta-stepping's bins are sized by the weights, sampled once a graph.
        sample = graph_cached(graph, ("weight sample", alg.op),
                              lambda: weight_sample(weights)) if alg.operator.binned else None
        res = push_until(indptr, indices, weights, values, np.asarray(frontier),
                         alg.op, int(edge_limit), None if self.push_in_bins else math.inf,
                         scratch=self._scratch,
                         max_degree=graph_max_out_degree(graph), sample=sample)
        if len(res.changed):
            self.apply_host_changes(res.changed, epoch)
        return PushOutcome(res.frontier, res.rounds, res.edges_pushed, len(res.changed),
                           res.minimum)

    def close(self) -> None:
        super().close()
        if self._scratch is not None:
            hand_back(self.graph, "push_scratch", self._scratch)  # every push leaves it clean
            self._scratch = None
