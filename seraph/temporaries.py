"""The directories a run makes beside a store's destination, and what it may replace.

A run writing ``NAME`` works in NAME's folder, so that the finished store is renamed into
place on the same file system:

    .NAME.spill-<pid>-<hex>   spilled edges (partitioner.writer)
    NAME.tmp-<pid>-<hex>      the store being built (seraph.store.StoreWriter)
    NAME.old-<pid>-<hex>      the store being replaced, for a moment during the commit

Each temporary holds a marker file naming the host and process that made it. The run
removes them on every exit it lives through (an exception, Ctrl-C, SIGTERM via the CLI, a
full disk). A run killed outright (SIGKILL, power loss) cannot; the next run to the same
destination removes them once their process is gone. Nothing else is ever removed: a
directory counts as Seraph's only by its name *and* its marker (or, for the moment a
marker is absent, by being a Seraph store or empty).
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

MARKER = ".seraph-temporary"
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
    path = temp_path(dest, kind)
    path.mkdir()
    try:
        mark(path)
    except BaseException:  # a full disk, say
        remove_tree(path)
        raise
    return path


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


# -- leftovers of killed runs ------------------------------------------------------------
def _owner(path: Path, pid_in_name: int) -> tuple[str, int] | None:
    """(host, pid) of the run that made ``path``, or None when it is not Seraph's."""
    try:
        doc = json.loads((path / MARKER).read_text())
        return str(doc["host"]), int(doc["pid"])
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # A store being built loses its marker just before it is renamed into place, and a
    # replaced store never had one; a directory made a moment before its marker is empty.
    if store_format(path) == "seraph-graph" or not any(path.iterdir()):
        return socket.gethostname(), pid_in_name
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_leftovers(dest: Path) -> list[Path]:
    """Removes the temporaries of earlier runs to ``dest`` whose process is gone (on this
    host); returns them. Those of a live run, of another host, or not made by Seraph stay."""
    pattern = re.compile(rf"(\.{re.escape(dest.name)}\.spill|{re.escape(dest.name)}\.(?:tmp|old))"
                         r"-(\d+)-[0-9a-f]{8}")
    removed = []
    try:
        entries = sorted(dest.parent.iterdir())
    except FileNotFoundError:
        return removed
    host = socket.gethostname()
    for path in entries:
        match = pattern.fullmatch(path.name)
        if match is None or path.is_symlink() or not path.is_dir():
            continue
        owner = _owner(path, int(match.group(2)))
        if owner is None or owner[0] != host or _alive(owner[1]):
            continue
        remove_tree(path)
        removed.append(path)
    return removed
