"""Where numba keeps the kernels it compiles: a per-user cache directory, never the package.

numba's default puts its cache files (``.nbi``/``.nbc``) in ``__pycache__`` beside the
sources. For an installed package that is site-packages, where the files outlive the
package: after ``pip install .`` and then ``pip install -e .``, the left-over
``site-packages/seraph/__pycache__`` makes ``seraph`` a namespace package that hides the
editable one. So the cache goes to the platform's user cache, unless ``NUMBA_CACHE_DIR``
says otherwise.

numba files a kernel's cache under a hash of its source file's directory, so an editable
install (the repository) and a normal one (site-packages) of the same sources would each
compile everything. Our kernels are filed by module name instead, and an entry is valid
while the source file's bytes are the same (:class:`PackageLocator`): the two installs
share them.

Two processes that reach one of our kernels at once (the demo and the helper that
compiles ahead for it, seraph.compiling; two test runs) would each compile it, and each
rewrite its cache index, where one's entry can end up naming the other's code. So
compiling or loading one of our kernels holds a lock beside its index
(:func:`_compiling_alone`): the second process waits, then loads what the first saved.

This module must run before any ``@njit(cache=True)`` function is defined, because numba
picks a function's cache directory when it decorates it: both ``seraph/__init__.py`` and
``partitioner/__init__.py`` import it first.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no locks, each process compiles what it needs
    fcntl = None

#: The packages whose kernels are cached by content (the distribution installs both).
PACKAGES = ("seraph", "partitioner")


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

# numba reads the cache directory at import, so it is imported only once that is set.
from numba.core import caching, config, event  # noqa: E402
from numba.core.dispatcher import Dispatcher  # noqa: E402

#: The event a process waiting for another's compile is in (seraph.compiling counts it).
WAITING = "seraph:compile_wait"


#: The module that compiles kernels as twins (seraph.kernels).
_KERNELS = str(Path(__file__).with_name("kernels.py"))


@functools.cache
def _source_hash(path: str, mtime: float, size: int) -> str:
    # mtime and size are part of the memo's key only: a file edited while we run is re-read.
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class PackageLocator(caching._CacheLocator):
    """Files a kernel of our packages under ``<cache>/<package>/<subpackage>/`` by its
    module's name, valid while its source file's bytes are unchanged, wherever installed."""

    def __init__(self, py_func, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        package = py_func.__module__.split(".")[:-1]
        self._cache_path = os.path.join(config.CACHE_DIR, *package)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        # seraph/kernels.py says how a twinned kernel compiles (its options), so its bytes
        # are part of every kernel's stamp.
        stamps = []
        for path in (self._py_file, _KERNELS):
            st = os.stat(path)
            stamps.append(_source_hash(path, st.st_mtime, st.st_size))
        return " ".join(stamps)

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file: str):
        module = getattr(py_func, "__module__", None) or ""
        if (not config.CACHE_DIR or module.split(".")[0] not in PACKAGES or "." not in module
                or not os.path.isfile(py_file)):
            return None  # numba's own locators take it
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None
        return locator


if PackageLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, PackageLocator)


_locks: dict[str, tuple[int, int]] = {}  # lock file -> (descriptor, depth)
_bookkeeping = threading.Lock()


def _lock_file(dispatcher) -> str | None:
    """The file whose lock a process holds while it compiles or loads ``dispatcher``'s
    kernels: beside its cache index (None: not one of our cached kernels)."""
    cache = getattr(dispatcher, "_cache", None)
    impl, files = getattr(cache, "_impl", None), getattr(cache, "_cache_file", None)
    if not isinstance(getattr(impl, "locator", None), PackageLocator) or files is None:
        return None
    return files._index_path + ".lock"


def _locked(path: str, dispatcher) -> int | None:
    """A descriptor of ``path`` holding its lock, once no other process holds it (None
    where the cache cannot take a lock file: it is read-only, and numba saves nothing)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process has it: wait, as compiling
            with event.trigger_event(WAITING, data={"dispatcher": dispatcher}):
                fcntl.lockf(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def _compiling_alone(dispatcher) -> Iterator[None]:
    """Holds ``dispatcher``'s lock file (see the module docstring). The locks are fcntl's
    record locks, which belong to the process: a nested compile never waits for its own
    process, and the locks of a process that dies go with it. (Compiles run one at a time
    in a process, under numba's lock; the count only keeps the file open while nested.)"""
    path = None if fcntl is None else _lock_file(dispatcher)
    if path is None:
        yield
        return
    with _bookkeeping:
        fd, depth = _locks.get(path, (-1, 0))
        if depth:
            _locks[path] = (fd, depth + 1)
    if not depth:
        fd = _locked(path, dispatcher)
        if fd is None:
            yield
            return
        with _bookkeeping:
            _locks[path] = (fd, 1)
    try:
        yield
    finally:
        with _bookkeeping:
            fd, depth = _locks.pop(path)
            if depth > 1:
                _locks[path] = (fd, depth - 1)
        if depth == 1:
            os.close(fd)  # and with it the lock


def _compile(self, sig):
    with _compiling_alone(self):
        return _numba_compile(self, sig)


if getattr(Dispatcher.compile, "__module__", None) != __name__:
    _numba_compile = Dispatcher.compile
    Dispatcher.compile = _compile
