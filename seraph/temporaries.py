"""The directories a run makes beside a store's destination, and what it may replace.

A run writing ``NAME`` works in NAME's folder, so that the finished store is renamed into
place on the same file system:

    .NAME.spill-<pid>-<hex>   spilled edges (partitioner.writer)
    NAME.tmp-<pid>-<hex>      the store being built (seraph.store.StoreWriter)
    NAME.old-<pid>-<hex>      the store being replaced, for a moment during the commit

The run holds a lock (``flock``) on each spill and tmp directory for as long as it lives,
and writes a marker file in it naming the host and process. It removes them on every exit
it lives through (an exception, Ctrl-C, SIGTERM via the CLI, a full disk). A run killed
outright (SIGKILL, power loss) cannot; its locks go with it, and the next run to the same
destination removes every directory of these names whose lock it can take. A lock, not
the process id, tells a live run: a killed process that its parent has not yet waited for
(a zombie) still has its id, but holds no lock. Nothing else is ever removed: a directory
counts as Seraph's only by its name *and* its content: the marker of this host, or
nothing but what a store holds (zarr metadata and chunk files), or nothing at all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from seraph.errors import StoreError

try:
    import fcntl
except ImportError:  # Windows: no flock, so no temporary is ever taken for dead
    fcntl = None

MARKER = ".seraph-temporary"
#: The lock this process holds on each of its temporaries (see make_temp_dir).
_locks: dict[Path, int | None] = {}
#: Top-level entries of a store (seraph.store's layout).
_STORE_ENTRIES = {"zarr.json", "csc", "csr", "pages", "vertices"}


def temp_path(dest: Path, kind: str) -> Path:
    """A fresh name for a temporary of ``kind`` (spill, tmp, old) beside ``dest``."""
    stem = f".{dest.name}" if kind == "spill" else dest.name
    return dest.with_name(f"{stem}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def mark(path: Path) -> None:
    """Writes the marker that lets a later run recognise ``path`` as this run's."""
    (path / MARKER).write_text(json.dumps({"host": socket.gethostname(),
                                           "pid": os.getpid()}))


def make_temp_dir(dest: Path, kind: str) -> Path:
    """A fresh temporary of ``kind`` beside ``dest``: locked by this process until it is
    removed (:func:`remove_tree`) or committed (:func:`release`), and marked."""
    while True:
        path = temp_path(dest, kind)
        path.mkdir()
        try:
            lock = _lock(path)
        except FileNotFoundError:
            continue
        # Another run's cleanup may have taken the new directory for dead (and removed it)
        # in the instant before the lock: then it is made again, under another name.
        if fcntl is None or lock is not None and _same_directory(lock, path):
            break
        if lock is not None:
            os.close(lock)
    _locks[path] = lock
    try:
        mark(path)
    except BaseException:  # a full disk, say
        remove_tree(path)
        raise
    return path


def _lock(path: Path) -> int | None:
    """A descriptor of the directory ``path`` that holds its exclusive lock, or None while
    another holds it (always, where there is no flock). A lock lasts until its descriptor
    is closed: at the latest when its process ends, however it ends."""
    if fcntl is None:
        return None
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _same_directory(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def release(path: Path) -> None:
    """Gives up this process's lock on the temporary ``path`` (once it is committed, or
    removed)."""
    lock = _locks.pop(path, None)
    if lock is not None:
        os.close(lock)


@contextmanager
def temp_dir(dest: Path, kind: str) -> Iterator[Path]:
    """A marked temporary directory beside ``dest``, removed however the block ends."""
    path = None
    try:
        # A signal handled as make_temp_dir returns would be raised before ``path`` is
        # set, and the directory left; held, it is raised as the `with` ends, inside the try.
        with signals_deferred():
            path = make_temp_dir(dest, kind)
        yield path
    finally:
        if path is not None:
            remove_tree(path)


@contextmanager
def folder_for(dest: Path) -> Iterator[None]:
    """Creates the missing folders above ``dest``; removes them again, if still empty,
    when the block fails."""
    created = []
    for folder in (dest.parent, *dest.parent.parents):
        if folder.exists():
            break
        created.append(folder)  # deepest first
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:
        for folder in created:
            try:
                folder.rmdir()
            except OSError:  # no longer empty: someone else's now
                break
        raise


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Holds SIGINT and SIGTERM until the block ends, so that a second Ctrl-C does not cut
    a cleanup short; a signal that came meanwhile is raised again at the end. Only the
    main thread handles signals, so elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, _frame: caught.append(signum))
                for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)


def remove_tree(path: Path) -> None:
    with signals_deferred():
        shutil.rmtree(path, ignore_errors=True)
        release(path)  # only now: while it is there, the directory is a live run's


# -- stores ------------------------------------------------------------------------------
def store_format(path: Path) -> str | None:
    """The ``format`` attribute of the zarr group at ``path``, or None if it has none."""
    try:
        doc = json.loads((path / "zarr.json").read_text())
    except (OSError, ValueError):
        return None
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    return attrs.get("format") if isinstance(attrs, dict) else None


def _foreign_files(path: Path) -> list[str]:
    """Files under the store directory ``path`` that a store does not have: anything but
    zarr metadata and chunk files (``<array>/c/<index>``)."""
    foreign = [p.name for p in path.iterdir() if p.name not in _STORE_ENTRIES | {MARKER}]
    for dirpath, _dirs, files in os.walk(path):
        rel = Path(dirpath).relative_to(path).parts
        in_chunks = "c" in rel
        for name in files:
            if name == "zarr.json" or (in_chunks and name.isdigit()):
                continue
            if not rel and name == MARKER:
                continue
            foreign.append(str(Path(*rel, name)))
    return sorted(set(foreign))


def why_not_replaceable(path: Path) -> str | None:
    """Why ``--force`` must not replace ``path``, or None when it is a Seraph store
    (complete or not) holding nothing but its own files."""
    if path.is_symlink():
        return "is a symbolic link"
    if not path.is_dir():
        return "is a file"
    if store_format(path) != "seraph-graph":
        return "is a folder that is not a Seraph store"
    foreign = _foreign_files(path)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        return f"is a Seraph store that also holds other files ({shown})"
    return None


def check_output(path: Path, force: bool) -> None:
    """Refuses an existing output, unless ``force`` and it is a replaceable store."""
    if not (path.exists() or path.is_symlink()):
        return
    if not force:
        raise StoreError(f"{path} already exists (use --force / force=True to replace it)")
    reason = why_not_replaceable(path)
    if reason is not None:
        raise StoreError(f"{path} {reason}; --force replaces only a Seraph store, so it was "
                         "left untouched (remove it yourself or choose another output)")


# -- the commit ---------------------------------------------------------------------------
#: How many temporaries this process has renamed into place (see :func:`commit`).
_commits = 0


def commit(tmp: Path, dest: Path, replace: bool) -> None:
    """Renames the finished temporary ``tmp`` to ``dest``, the moment the output exists;
    with ``replace``, an existing store at ``dest`` is renamed aside first and then removed.
    The caller holds signals across it (:func:`signals_deferred`), so that it happens
    whole or not at all."""
    global _commits
    if dest.exists() or dest.is_symlink():
        if not replace:
            raise StoreError(f"{dest} appeared while it was being written")
        check_output(dest, force=True)  # it may have changed meanwhile
        trash = temp_path(dest, "old")
        os.rename(dest, trash)
        os.rename(tmp, dest)
        _commits += 1
        remove_tree(trash)
    else:
        os.rename(tmp, dest)
        _commits += 1
    release(tmp)


def commits() -> int:
    """How many outputs this process has committed so far: a front end whose work ends
    with a commit can tell that a signal came after it, too late to undo anything."""
    return _commits


# -- leftovers of killed runs ------------------------------------------------------------
def _ours(path: Path) -> bool:
    """Whether ``path`` (named as a temporary) holds what Seraph's temporaries hold."""
    try:
        host = json.loads((path / MARKER).read_text())["host"]
    except FileNotFoundError:
        # A store being built loses its marker just before it is renamed into place, a
        # replaced store never had one, and a directory is empty a moment before its marker.
        return not _foreign_files(path)
    except (OSError, ValueError, KeyError, TypeError):
        return True  # a marker cut short by the kill that left it
    return host == socket.gethostname()  # another host's locks are not seen here


def remove_leftovers(dest: Path) -> list[Path]:
    """Removes the temporaries of earlier runs to ``dest`` that no live run holds (on this
    host); returns them. Those of a live run, of another host, or not made by Seraph stay."""
    pattern = re.compile(rf"(\.{re.escape(dest.name)}\.spill|{re.escape(dest.name)}\.(?:tmp|old))"
                         r"-\d+-[0-9a-f]{8}")
    removed = []
    try:
        entries = sorted(dest.parent.iterdir())
    except FileNotFoundError:
        return removed
    for path in entries:
        if pattern.fullmatch(path.name) is None or path.is_symlink() or not path.is_dir():
            continue
        try:
            lock = _lock(path)
        except OSError:  # removed meanwhile (by its run or another cleanup), or not ours to open
            continue
        if lock is None:
            continue
        try:
            if _ours(path):
                remove_tree(path)
                removed.append(path)
        finally:
            os.close(lock)
    return removed
