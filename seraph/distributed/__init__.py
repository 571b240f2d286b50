"""One query over several workers: CPU processes (``workers=N``) or one process per GPU
(``devices=[0, 1]``), started and connected by MPI (docs/design.md, "Many workers").

- :mod:`~seraph.distributed.parts`: the graph's pages split among the workers;
- :mod:`~seraph.distributed.mpi`: the MPI job this process is part of, and the
  collectives over host arrays (MPI) or device arrays (NCCL);
- :mod:`~seraph.distributed.exchange`: what the workers exchange between rounds;
- :mod:`~seraph.distributed.engine`: the partitioned run;
- :mod:`~seraph.distributed.spread`: several sources, source-parallel (each worker its
  share, on the whole graph);
- :mod:`~seraph.distributed.launch`: starting a job under ``mpiexec`` from the command
  line or the API, and saying how it ended; :mod:`~seraph.distributed.guard` and
  :mod:`~seraph.distributed.job`, what ``mpiexec`` runs.
"""
