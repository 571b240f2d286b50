"""The CUDA kernels (``*.cu``, ``values.cuh``) and their interface (:mod:`.interface`)."""
