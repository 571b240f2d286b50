"""Backends: the same slot and window logic on the CPU (numba) or a CUDA GPU (cupy)."""
