"""Where numba keeps the kernels it compiles: a per-user cache directory, never the package.

numba's default puts its cache files (``.nbi``/``.nbc``) in ``__pycache__`` beside the
sources. For an installed package that is site-packages, where the files outlive the
package: after ``pip install .`` and then ``pip install -e .``, the left-over
``site-packages/seraph/__pycache__`` makes ``seraph`` a namespace package that hides the
editable one. So the cache goes to the platform's user cache, unless ``NUMBA_CACHE_DIR``
says otherwise.

This module must run before any ``@njit(cache=True)`` function is defined, because numba
picks a function's cache directory when it decorates it: both ``seraph/__init__.py`` and
``partitioner/__init__.py`` import it first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def user_cache_dir(app: str = "seraph") -> Path:
    """The platform's per-user cache directory for ``app`` (not created here)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / app / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / app
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / app


def configure() -> str:
    """Points numba at the user cache unless ``NUMBA_CACHE_DIR`` is set; returns the directory.

    The environment variable (rather than ``numba.config`` alone) is what survives: numba
    re-reads its ``NUMBA_*`` variables before each compile, and child processes inherit it.
    """
    if not os.environ.get("NUMBA_CACHE_DIR"):
        os.environ["NUMBA_CACHE_DIR"] = str(user_cache_dir() / "numba")
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba was imported before us: make it see the variable now
        config.reload_config()
    return os.environ["NUMBA_CACHE_DIR"]


CACHE_DIR = configure()
