"""The host backend: everything that runs on the CPU (pull sweeps, push and bottom-up
rounds, the atomics they use) and :class:`~seraph.backends.cpu.backend.CpuBackend`."""
