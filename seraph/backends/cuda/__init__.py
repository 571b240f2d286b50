"""The CUDA backend (:mod:`seraph.backends.cuda.backend`, which needs cupy), its device
graph and its kernels (``kernels/*.cu``, compiled at run time). Importing this package
imports nothing of cupy."""
