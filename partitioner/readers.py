"""Input readers: edge-list files, Matrix Market, ``.npz``, NumPy arrays and scipy matrices.

Every reader returns an :class:`~partitioner.edges.EdgeSource` whose ``chunks()`` reopens
and re-reads its input, so the writer can make several passes without the whole graph
ever being in memory.

Text is read in binary blocks cut at the last newline (the partial line is carried into the
next block). Each block is cut at newlines into one piece per numba thread, and the pieces
are parsed in parallel by a byte parser straight into int64/float32 arrays. The parser
stops at the first bad line and reports its offset; only then is the line's text decoded,
and its number comes from the newlines the parser has already consumed.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numba
import numpy as np
from numba import njit, prange

from partitioner.edges import DEFAULT_CHUNK_EDGES, EdgeChunk, EdgeSource
from seraph.errors import ConfigError, InputError

FORMATS: tuple[str, ...] = ("snap", "el", "wel", "mtx", "npz")
WEIGHT_MODES: tuple[str, ...] = ("auto", "none", "file")

_EXTENSIONS = {".txt": "snap", ".snap": "snap", ".tsv": "snap", ".el": "el", ".wel": "wel",
               ".mtx": "mtx", ".npz": "npz"}
_COMPRESSIONS: dict[str, Callable[..., IO[bytes]]] = {
    ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}

#: Bytes read per block. Large blocks amortise the Python loop; tests shrink it to exercise
#: the carry of partial lines between blocks.
_BLOCK_BYTES = 32 << 20
#: Smaller blocks (small files) are parsed on the calling thread: waking the thread pool
#: would cost more than it saves, and much more when other processes keep the cores busy.
_PARALLEL_BYTES = 1 << 20

# --------------------------------------------------------------------------- byte parser

_NL, _CR, _SP, _TAB = 10, 13, 32, 9
_HASH, _PCT, _PLUS, _MINUS, _DOT = 35, 37, 43, 45, 46
_INT64_MAX = (1 << 63) - 1

# Error codes of the parser; _PARSE_ERRORS turns them into messages.
_OK, _TOO_FEW, _TOO_MANY, _NO_WEIGHT = 0, 1, 2, 3
_NONINT, _NEGATIVE_ID, _HUGE_ID, _OUT_OF_RANGE = 4, 5, 6, 7
_BAD_WEIGHT, _NAN_WEIGHT, _INF_WEIGHT, _NEG_WEIGHT, _HUGE_WEIGHT = 8, 9, 10, 11, 12

_PARSE_ERRORS = {
    _TOO_FEW: "missing destination vertex id",
    _TOO_MANY: "too many columns (expected at most {max_cols})",
    _NO_WEIGHT: "missing weight column",
    _NONINT: "non-integer vertex id",
    _NEGATIVE_ID: "negative vertex id",
    _HUGE_ID: "vertex id larger than 2^63-1",
    _OUT_OF_RANGE: "entry index out of range 1..{limit}",
    _BAD_WEIGHT: "malformed weight",
    _NAN_WEIGHT: "NaN weight",
    _INF_WEIGHT: "infinite weight",
    _NEG_WEIGHT: "negative weight",
    _HUGE_WEIGHT: "weight too large for float32",
}

_POW10 = np.array([10.0 ** k for k in range(23)])  # exactly representable powers
# Doubles from here up round to float32 infinity (halfway past the largest float32, which
# has an odd mantissa, rounds to even: up).
_FLOAT32_OVERFLOW = 2.0**128 - 2.0**103


# Every line the parser sees ends with a newline (_blocks guarantees it), so scanning within
# a line needs no end-of-buffer checks: the newline stops every loop.


@njit(cache=True, inline="always")
def _is_blank(c) -> bool:
    # '\r' counts as a blank so that CRLF lines need no special case.
    return c in (_SP, _TAB, _CR)


@njit(cache=True, inline="always")
def _is_digit(c) -> bool:
    return 48 <= c <= 57


@njit(cache=True, inline="always")
def _skip_blanks(buf, pos):
    while _is_blank(buf[pos]):
        pos += 1
    return pos


@njit(cache=True, inline="always")
def _at_token_end(buf, pos) -> bool:
    return buf[pos] == _NL or _is_blank(buf[pos])


@njit(cache=True, inline="always")
def _skip_token(buf, pos):
    while not _at_token_end(buf, pos):
        pos += 1
    return pos


@njit(cache=True)
def _checked_int(buf, start, stop):
    """Digits buf[start:stop] as an int64, or -1 if they exceed 2^63-1 (the rare slow path)."""
    v = 0
    for i in range(start, stop):
        d = np.int64(buf[i]) - 48
        if v > (_INT64_MAX - d) // 10:
            return -1
        v = v * 10 + d
    return v


@njit(cache=True)
def _parse_id_carefully(buf, pos):
    """:func:`_parse_id` for the unusual tokens: signs, over 18 digits, errors."""
    negative = buf[pos] == _MINUS
    if negative or buf[pos] == _PLUS:
        pos += 1
    start = pos
    while _is_digit(buf[pos]):
        pos += 1
    if pos == start or not _at_token_end(buf, pos):
        return -_NONINT, pos
    v = _checked_int(buf, start, pos)
    if v < 0:
        return -_HUGE_ID, pos
    if negative and v != 0:
        return -_NEGATIVE_ID, pos
    return v, pos


@njit(cache=True, inline="always")
def _parse_id(buf, pos):
    """Parses a vertex id token at ``pos``; returns (value, position after it).

    On error the value is minus the error code. The fast path takes plain ids of up to 18
    digits, which cannot overflow.
    """
    start = pos
    v = np.int64(0)
    while _is_digit(buf[pos]):
        v = v * 10 + (np.int64(buf[pos]) - 48)
        pos += 1
    if pos == start or pos - start > 18 or not _at_token_end(buf, pos):
        return _parse_id_carefully(buf, start)
    return v, pos


@njit(cache=True, inline="always")
def _match_word(buf, pos, word):
    """Whether the token at ``pos`` is the lower-case ASCII ``word``, ignoring case."""
    i = 0
    while i < len(word) and (buf[pos + i] | 32) == word[i]:  # stops at the newline
        i += 1
    return i == len(word) and _at_token_end(buf, pos + i)


_NAN_WORD = np.frombuffer(b"nan", dtype=np.uint8)
_INF_WORD = np.frombuffer(b"inf", dtype=np.uint8)
_INFINITY_WORD = np.frombuffer(b"infinity", dtype=np.uint8)


@njit(cache=True)
def _parse_special(buf, pos):
    """nan, inf or infinity (any case) at ``pos``: returns (error code, position after it)."""
    for word, err in ((_INFINITY_WORD, _INF_WEIGHT), (_INF_WORD, _INF_WEIGHT),
                      (_NAN_WORD, _NAN_WEIGHT)):
        if _match_word(buf, pos, word):
            return err, pos + len(word)
    return _BAD_WEIGHT, pos


@njit(cache=True, inline="always")
def _parse_digits(buf, pos, m):
    """Accumulates decimal digits into the float ``m``; returns (m, position, digit count)."""
    start = pos
    while _is_digit(buf[pos]):
        m = m * 10.0 + (np.int64(buf[pos]) - 48)
        pos += 1
    return m, pos, pos - start


@njit(cache=True, inline="always")
def _parse_exponent(buf, pos):
    """An optional ``(e|E)[+-]digits`` suffix: returns (exponent, position, ok)."""
    if (buf[pos] | 32) != 101:  # 'e'
        return 0, pos, True
    pos += 1
    sign = -1 if buf[pos] == _MINUS else 1
    if buf[pos] == _PLUS or buf[pos] == _MINUS:
        pos += 1
    e = 0
    start = pos
    while _is_digit(buf[pos]):
        e = min(e * 10 + np.int64(buf[pos]) - 48, 100000)  # clamp: the result is 0 or inf anyway
        pos += 1
    return sign * e, pos, pos > start


@njit(cache=True)
def _scale(m, exp10):
    """m * 10**exp10, exact for the common case of short mantissas and small exponents."""
    if exp10 >= 0:
        return m * _POW10[exp10] if exp10 < 23 else m * 10.0 ** exp10
    return m / _POW10[-exp10] if exp10 > -23 else m / 10.0 ** -exp10


@njit(cache=True, inline="always")
def _parse_weight(buf, pos):
    """Parses a weight token; returns (float32 value, position after it, error code).

    Accepts ``[+-]digits[.digits][(e|E)[+-]digits]`` and recognises nan, inf and infinity
    only to report them.
    """
    negative = buf[pos] == _MINUS
    if negative or buf[pos] == _PLUS:
        pos += 1
    if (buf[pos] | 32) == 110 or (buf[pos] | 32) == 105:  # 'n' or 'i'
        err, pos = _parse_special(buf, pos)
        return np.float32(0), pos, err
    m, pos, int_digits = _parse_digits(buf, pos, 0.0)
    frac_digits = 0
    if buf[pos] == _DOT:
        m, pos, frac_digits = _parse_digits(buf, pos + 1, m)
    exp10, pos, exp_ok = _parse_exponent(buf, pos)
    if int_digits + frac_digits == 0 or not exp_ok or not _at_token_end(buf, pos):
        return np.float32(0), pos, _BAD_WEIGHT
    value = _scale(m, exp10 - frac_digits)
    if value == 0.0:
        return np.float32(0.0), pos, _OK  # "-0" is zero, not a negative weight (nor -0.0)
    if negative:
        return np.float32(0), pos, _NEG_WEIGHT
    if value >= _FLOAT32_OVERFLOW:
        return np.float32(0), pos, _HUGE_WEIGHT
    return np.float32(value), pos, _OK


@njit(cache=True, inline="always")
def _parse_edge(buf, pos, min_cols, max_cols, want_weight, one_based, limit):
    """Parses ``src dst [weight]`` at ``pos``; returns (src, dst, weight, position).

    On error ``src`` is minus the error code. The weight is parsed only if ``want_weight``,
    otherwise skipped. ``one_based`` ids are shifted to 0-based and, with ``limit >= 0``,
    must be below it.
    """
    w = np.float32(0)
    s, pos = _parse_id(buf, pos)
    if s < 0:
        return s, s, w, pos
    pos = _skip_blanks(buf, pos)
    if buf[pos] == _NL:
        return -_TOO_FEW, s, w, pos
    d, pos = _parse_id(buf, pos)
    if d < 0:
        return d, d, w, pos
    pos = _skip_blanks(buf, pos)
    cols = 2
    if buf[pos] != _NL:
        cols = 3
        if want_weight:
            w, pos, err = _parse_weight(buf, pos)
            if err != _OK:
                return -err, d, w, pos
        else:
            pos = _skip_token(buf, pos)
        pos = _skip_blanks(buf, pos)
        if buf[pos] != _NL:
            return -_TOO_MANY, d, w, pos
    if cols < min_cols:
        return -_NO_WEIGHT, d, w, pos
    if cols > max_cols:
        return -_TOO_MANY, d, w, pos
    if one_based:
        s -= 1
        d -= 1
        if s < 0 or d < 0 or (limit >= 0 and (s >= limit or d >= limit)):
            return -_OUT_OF_RANGE, d, w, pos
    return s, d, w, pos


@njit(cache=True)
def _parse_lines(buf, pos, end, src, dst, weight, fill,
                 min_cols, max_cols, want_weight, one_based, limit):
    """Parses the lines of ``buf[pos:end]`` (which ends with a newline) into
    ``src/dst/weight[fill:]``, skipping blank and comment lines.

    Stops at ``end`` or at the first bad line. Returns ``(fill, pos, lines, error)``: the new
    fill, where parsing stopped (the start of the bad line on error), the newlines consumed,
    and an error code (0 for none). The outputs must have room for one edge per line. The
    other arguments are :func:`_parse_edge`'s.
    """
    lines = 0
    while pos < end:
        line_start = pos
        pos = _skip_blanks(buf, pos)
        if buf[pos] in (_HASH, _PCT):
            while buf[pos] != _NL:
                pos += 1
        elif buf[pos] != _NL:
            s, d, w, pos = _parse_edge(buf, pos, min_cols, max_cols, want_weight, one_based,
                                       limit)
            if s < 0:
                return fill, line_start, lines, -s
            src[fill] = s
            dst[fill] = d
            if want_weight:
                weight[fill] = w
            fill += 1
        pos += 1  # past the newline
        lines += 1
    return fill, pos, lines, _OK


@njit(cache=True)
def _split_lines(buf, end, pieces):
    """Cuts ``buf[:end]`` after newlines into ``pieces`` runs of about equal size."""
    cuts = np.empty(pieces + 1, dtype=np.int64)
    cuts[0] = 0
    for k in range(1, pieces):
        pos = max(end * k // pieces, cuts[k - 1])
        while 0 < pos < end and buf[pos - 1] != _NL:
            pos += 1
        cuts[k] = pos
    cuts[pieces] = end
    return cuts


@njit(cache=True, inline="always")
def _parse_pieces_body(buf, cuts, min_cols, max_cols, want_weight, one_based, limit):
    """Parses the pieces ``buf[cuts[p]:cuts[p+1]]`` (see :func:`_parse_lines`).

    Each piece writes into its own region of the outputs, sized by its line count; the gaps
    that comment and blank lines leave are then closed up. Returns ``(src, dst, weight,
    count, stops, lines, errors)`` with per-piece stop positions, newline counts and error
    codes.
    """
    pieces = len(cuts) - 1
    room = np.zeros(pieces, dtype=np.int64)
    for p in prange(pieces):
        for i in range(cuts[p], cuts[p + 1]):
            room[p] += buf[i] == _NL
    offsets = np.zeros(pieces + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(room)
    src = np.empty(offsets[-1], dtype=np.int64)
    dst = np.empty(offsets[-1], dtype=np.int64)
    weight = np.empty(offsets[-1] if want_weight else 0, dtype=np.float32)
    fills = np.empty(pieces, dtype=np.int64)
    stops = np.empty(pieces, dtype=np.int64)
    lines = np.empty(pieces, dtype=np.int64)
    errors = np.empty(pieces, dtype=np.int64)
    for p in prange(pieces):
        fills[p], stops[p], lines[p], errors[p] = _parse_lines(
            buf, cuts[p], cuts[p + 1], src, dst, weight, offsets[p],
            min_cols, max_cols, want_weight, one_based, limit)
    count = fills[0]
    for p in range(1, pieces):  # move each piece's edges down behind the previous piece's
        if count == offsets[p]:  # no gap: nothing to move
            count = fills[p]
            continue
        for i in range(offsets[p], fills[p]):
            src[count] = src[i]
            dst[count] = dst[i]
            if want_weight:
                weight[count] = weight[i]
            count += 1
    return src, dst, weight, count, stops, lines, errors


@njit(cache=True, parallel=True)
def _parse_pieces(buf, cuts, min_cols, max_cols, want_weight, one_based, limit):
    """:func:`_parse_pieces_body` with a thread per piece."""
    return _parse_pieces_body(buf, cuts, min_cols, max_cols, want_weight, one_based, limit)


@njit(cache=True)
def _parse_pieces_serially(buf, cuts, min_cols, max_cols, want_weight, one_based, limit):
    """:func:`_parse_pieces_body` on the calling thread (``prange`` is ``range`` here)."""
    return _parse_pieces_body(buf, cuts, min_cols, max_cols, want_weight, one_based, limit)


# --------------------------------------------------------------------------- streams


def _compression(path: Path) -> str | None:
    suffix = path.suffix.lower()
    return suffix if suffix in _COMPRESSIONS else None


class _CountedFile(io.RawIOBase):
    """The input file, counting the bytes read from it (compressed bytes, for a
    compressed file): how far the reading bar has come, against the file's size."""

    def __init__(self, path: Path):
        self._file = open(path, "rb")  # noqa: SIM115 (closed by close())
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._file.readinto(buffer)
        self.count += n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


@contextlib.contextmanager
def _open_binary(path: Path) -> Iterator[tuple[IO[bytes], _CountedFile]]:
    """Opens ``path`` for reading, decompressing by its suffix; yields the stream and the
    file under it."""
    try:
        raw = _CountedFile(path)
    except OSError as e:
        raise InputError(f"{path}: cannot open: {e.strerror or e}") from e
    opener = _COMPRESSIONS.get(_compression(path) or "", io.BufferedReader)
    with raw, opener(raw) as stream:
        yield stream, raw


@contextlib.contextmanager
def _read_errors(path: Path) -> Iterator[None]:
    """Turns decompression failures (and I/O errors) while reading into InputError."""
    try:
        yield
    except (EOFError, zlib.error, lzma.LZMAError, OSError) as e:
        if _compression(path) is None:
            raise InputError(f"{path}: read error: {e}") from e
        raise InputError(f"{path}: truncated or corrupt compressed file") from e


def _fill(stream: IO[bytes], view: memoryview) -> int:
    """Reads into ``view`` until it is full or the stream ends; returns the bytes read."""
    n = 0
    while n < len(view):
        got = stream.readinto(view[n:])
        if not got:
            break
        n += got
    return n


def _blocks(stream: IO[bytes]) -> Iterator[tuple[np.ndarray, int]]:
    """Yields ``(buffer, end)`` where ``buffer[:end]`` holds whole lines of the stream, each
    ending with a newline (one is added to a last line that lacks it).

    The buffer is reused: the caller must be done with it before asking for the next block.
    A line longer than a block makes the buffer grow.
    """
    data = bytearray(_BLOCK_BYTES)
    kept = 0  # bytes of a partial line carried over from the previous block
    while True:
        size = kept + _fill(stream, memoryview(data)[kept:])
        if size < len(data):  # end of stream
            if size and data[size - 1] != _NL:
                data[size] = _NL  # end the last line as the parser expects
                size += 1
            if size:
                yield np.frombuffer(data, dtype=np.uint8), size
            return
        cut = data.rfind(b"\n") + 1
        if cut == 0:  # a new object: the caller may still hold views of the old one
            data = data + bytes(len(data))
            kept = size
            continue
        yield np.frombuffer(data, dtype=np.uint8), cut
        data[: size - cut] = data[cut:size]
        kept = size - cut


# --------------------------------------------------------------------------- text parsing


@dataclass(frozen=True)
class _Layout:
    """What a data line must look like and how to read it."""

    min_cols: int
    max_cols: int
    want_weight: bool
    one_based: bool = False
    limit: int = -1  # one-based ids must be in 1..limit when limit >= 0


def _line_error(path: Path, line: int, buf: np.ndarray, start: int, end: int,
                what: str) -> InputError:
    """The error for the line starting at ``buf[start]`` (its first 200 bytes quoted)."""
    text = bytes(buf[start:min(end, start + 200)]).split(b"\n", 1)[0]
    quoted = text.decode("utf-8", "replace").rstrip("\r")
    return InputError(f"{path}:{line}: {what} in line {quoted!r}")


def _parse_block(path: Path, buf: np.ndarray, end: int, layout: _Layout,
                 line: int) -> tuple[EdgeChunk, int]:
    """Parses the whole lines ``buf[:end]``, the first being line ``line`` of the file.

    Returns the edges and the number of lines parsed; raises InputError at a bad line.
    """
    cuts = _split_lines(buf, end, numba.get_num_threads())
    parse = _parse_pieces if end >= _PARALLEL_BYTES else _parse_pieces_serially
    src, dst, weight, count, stops, lines, errors = parse(
        buf, cuts, layout.min_cols, layout.max_cols, layout.want_weight, layout.one_based,
        layout.limit)
    bad = np.flatnonzero(errors)
    if len(bad):
        p = bad[0]
        what = _PARSE_ERRORS[errors[p]].format(max_cols=layout.max_cols, limit=layout.limit)
        raise _line_error(path, line + int(lines[: p + 1].sum()), buf, stops[p], end, what)
    chunk = EdgeChunk(src[:count], dst[:count], weight[:count] if layout.want_weight else None)
    return chunk, int(lines.sum())


def _parse_stream(path: Path, stream: IO[bytes], raw: _CountedFile, layout: _Layout,
                  chunk_edges: int, first_line: int = 1) -> Iterator[EdgeChunk]:
    """Parses data lines from ``stream`` (whose next line is ``first_line``) into chunks,
    each carrying the bytes ``raw`` read since the previous one."""
    line, reported = first_line, 0
    for buf, end in _blocks(stream):
        block, lines = _parse_block(path, buf, end, layout, line)
        line += lines
        for lo in range(0, len(block), chunk_edges):
            part = slice(lo, lo + chunk_edges)
            yield EdgeChunk(block.src[part], block.dst[part],
                            None if block.weight is None else block.weight[part],
                            input_bytes=raw.count - reported)
            reported = raw.count


def _text_chunks(path: Path, layout: _Layout, chunk_edges: int) -> Iterator[EdgeChunk]:
    found = False
    with _open_binary(path) as (stream, raw), _read_errors(path):
        for chunk in _parse_stream(path, stream, raw, layout, chunk_edges):
            found = True
            yield chunk
    if not found:
        raise InputError(f"{path}: no edges found (empty input)")


def _text_source(path: Path, fmt: str, weights: str, chunk_edges: int) -> EdgeSource:
    weighted = weights == "file" or (weights == "auto" and fmt == "wel")
    # A third column is tolerated in every format; only a weighted read requires it.
    layout = _Layout(min_cols=3 if weighted else 2, max_cols=3, want_weight=weighted)
    return EdgeSource(chunks=lambda: _text_chunks(path, layout, chunk_edges),
                      weighted=weighted, input_size=path.stat().st_size,
                      provenance=_provenance(path, fmt))


# --------------------------------------------------------------------------- Matrix Market


@dataclass(frozen=True)
class _MtxHeader:
    field: str
    symmetric: bool
    rows: int
    nnz: int
    lines: int  # lines up to and including the size line


_MTX_BANNER = "%%MatrixMarket matrix coordinate <field> <symmetry>"


def _read_mtx_header(path: Path, stream: IO[bytes]) -> _MtxHeader:
    """Reads the banner, comments and size line, leaving ``stream`` at the first entry."""
    banner = stream.readline().decode("ascii", "replace").split()
    if len(banner) != 5 or banner[0] != "%%MatrixMarket" or banner[1].lower() != "matrix":
        raise InputError(f"{path}: not a Matrix Market file (the first line must be "
                         f"'{_MTX_BANNER}')")
    layout, field, symmetry = (word.lower() for word in banner[2:])
    if layout != "coordinate":
        raise InputError(f"{path}: only coordinate format is supported, not {layout!r}")
    if field == "complex":
        raise InputError(f"{path}: complex matrices are not supported")
    if field not in ("pattern", "integer", "real"):
        raise InputError(f"{path}: unknown Matrix Market field {field!r} "
                         "(expected pattern, integer or real)")
    if symmetry not in ("general", "symmetric"):
        raise InputError(f"{path}: Matrix Market symmetry {symmetry!r} is not supported "
                         "(general or symmetric only)")
    lines = 1
    while True:
        raw = stream.readline()
        lines += 1
        text = raw.decode("ascii", "replace").strip()
        if not raw:
            raise InputError(f"{path}: missing size line 'rows cols nnz'")
        if text and not text.startswith("%"):
            break
    try:
        rows, cols, nnz = (int(word) for word in text.split())
        if min(rows, cols, nnz) < 0:
            raise ValueError
    except ValueError:
        raise InputError(f"{path}:{lines}: malformed size line {text!r} "
                         "(expected 'rows cols nnz')") from None
    if rows != cols:
        raise InputError(f"{path}: the matrix is {rows} x {cols}; a graph needs a square "
                         "adjacency matrix")
    return _MtxHeader(field, symmetry == "symmetric", rows, nnz, lines)


def _mirror(chunk: EdgeChunk) -> EdgeChunk:
    """Adds the reverse of every off-diagonal edge (Matrix Market ``symmetric``)."""
    off = chunk.src != chunk.dst
    weight = None if chunk.weight is None else np.concatenate([chunk.weight, chunk.weight[off]])
    return EdgeChunk(np.concatenate([chunk.src, chunk.dst[off]]),
                     np.concatenate([chunk.dst, chunk.src[off]]), weight, chunk.input_bytes)


def _mtx_chunks(path: Path, weighted: bool, chunk_edges: int) -> Iterator[EdgeChunk]:
    with _open_binary(path) as (stream, raw), _read_errors(path):
        header = _read_mtx_header(path, stream)
        cols = 2 if header.field == "pattern" else 3
        layout = _Layout(cols, cols, weighted, one_based=True, limit=header.rows)
        # Symmetric chunks double when mirrored; halve them to keep chunks near chunk_edges.
        capacity = max(1, chunk_edges // 2) if header.symmetric else chunk_edges
        entries = 0
        for chunk in _parse_stream(path, stream, raw, layout, capacity, header.lines + 1):
            entries += len(chunk)
            yield _mirror(chunk) if header.symmetric else chunk
    if entries != header.nnz:
        raise InputError(f"{path}: the size line says {header.nnz} entries but the file has "
                         f"{entries}")


def _mtx_source(path: Path, weights: str, chunk_edges: int) -> EdgeSource:
    with _open_binary(path) as (stream, _), _read_errors(path):
        header = _read_mtx_header(path, stream)
    if weights == "file" and header.field == "pattern":
        raise InputError(f"{path}: weights='file' but the matrix is a pattern (no values)")
    weighted = weights != "none" and header.field != "pattern"
    hint = 2 * header.nnz if header.symmetric else header.nnz
    return EdgeSource(chunks=lambda: _mtx_chunks(path, weighted, chunk_edges),
                      weighted=weighted, num_vertices=header.rows,
                      symmetric=header.symmetric, num_edges_hint=hint,
                      input_size=path.stat().st_size,
                      provenance=_provenance(path, "mtx"))


# --------------------------------------------------------------------------- arrays


def _id_array(label: str, a: object, num_vertices: int | None) -> np.ndarray:
    """Validates a src or dst array: 1-D integers, non-negative, below num_vertices."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise InputError(f"{label} must be an integer array, got {a.dtype}")
    if a.ndim != 1:
        raise InputError(f"{label} must be one-dimensional, got shape {a.shape}")
    if a.dtype.kind == "i" and len(a) and a.min() < 0:
        i = int(np.flatnonzero(a < 0)[0])
        raise InputError(f"{label}[{i}] = {a[i]} is a negative vertex id")
    if num_vertices is not None and len(a) and a.max() >= num_vertices:
        i = int(np.flatnonzero(a >= num_vertices)[0])
        raise InputError(f"{label}[{i}] = {a[i]} is out of range for "
                         f"num_vertices={num_vertices}")
    if a.dtype == np.uint64 and len(a) and a.max() > _INT64_MAX:
        i = int(np.flatnonzero(a > _INT64_MAX)[0])
        raise InputError(f"{label}[{i}] = {a[i]} is larger than 2^63-1")
    return a


def _weight_array(label: str, w: object) -> np.ndarray:
    """Validates weights: 1-D, real-valued, finite, non-negative, representable as float32."""
    w = np.asarray(w)
    if w.dtype.kind not in "biuf":
        raise InputError(f"{label} must be a real-valued array, got {w.dtype}")
    if w.ndim != 1:
        raise InputError(f"{label} must be one-dimensional, got shape {w.shape}")
    if w.dtype.kind == "f":
        # NaN fails every comparison; float32 and smaller can only overflow as inf.
        over = w >= _FLOAT32_OVERFLOW if w.dtype.itemsize > 4 else np.isinf(w)
        bad = ~(w >= 0) | over
    elif w.dtype.kind == "i":
        bad = w < 0
    else:
        return w
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        v = w[i]
        what = ("is NaN" if np.isnan(v) else "is infinite" if np.isinf(v)
                else "is negative" if v < 0 else "is too large for float32")
        raise InputError(f"{label}[{i}] = {v} {what}; weights must be finite and non-negative")
    return w


def _array_source(src: object, dst: object, weight: object, num_vertices: int | None,
                  where: str = "", provenance: dict | None = None) -> EdgeSource:
    """An EdgeSource over in-memory arrays; ``where`` prefixes error messages."""
    if num_vertices is not None and (not isinstance(num_vertices, int | np.integer)
                                     or num_vertices < 0):
        raise InputError(f"{where}num_vertices must be a non-negative integer, "
                         f"got {num_vertices!r}")
    src = _id_array(f"{where}src", src, num_vertices)
    dst = _id_array(f"{where}dst", dst, num_vertices)
    if weight is not None:
        weight = _weight_array(f"{where}weight", weight)
    lengths = {len(src), len(dst)} | ({len(weight)} if weight is not None else set())
    if len(lengths) > 1:
        sizes = f"src {len(src)}, dst {len(dst)}" + (
            f", weight {len(weight)}" if weight is not None else "")
        raise InputError(f"{where}arrays differ in length ({sizes})")
    if not len(src) and num_vertices is None:
        raise InputError(f"{where}no edges (empty input); pass num_vertices for a graph of "
                         "isolated vertices")

    def chunks() -> Iterator[EdgeChunk]:
        for lo in range(0, len(src), DEFAULT_CHUNK_EDGES):
            part = slice(lo, lo + DEFAULT_CHUNK_EDGES)
            w = None
            if weight is not None:
                w = weight[part].astype(np.float32)
                w += np.float32(0)  # turns -0.0 into +0.0: weights compare by bit pattern
            yield EdgeChunk(src[part].astype(np.int64, copy=False),
                            dst[part].astype(np.int64, copy=False), w)

    return EdgeSource(chunks=chunks, weighted=weight is not None,
                      num_vertices=None if num_vertices is None else int(num_vertices),
                      num_edges_hint=len(src), provenance=provenance or {"input": "arrays"})


def edges_from_arrays(src, dst, weight=None, num_vertices: int | None = None) -> EdgeSource:
    """Edges ``src[i] -> dst[i]`` (optionally weighted) from integer arrays.

    Arrays are validated now and sliced into chunks later, so they must not change until
    the store is written. Empty arrays are allowed only with ``num_vertices``.
    """
    return _array_source(src, dst, weight, num_vertices)


def edges_from_scipy(matrix) -> EdgeSource:
    """The edges of a square scipy.sparse matrix: entry (i, j) = w is edge i -> j, weight w.

    Every stored entry is an edge, explicit zeros included (as weight 0).
    """
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        kind = "a dense array" if isinstance(matrix, np.ndarray) else type(matrix).__name__
        raise InputError(f"expected a scipy.sparse matrix, got {kind}; convert it with "
                         "scipy.sparse.csr_array(...)")
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise InputError(f"the matrix is {' x '.join(map(str, matrix.shape))}; a graph needs a "
                         "square adjacency matrix")
    coo = matrix.tocoo()
    return _array_source(coo.row, coo.col, coo.data, coo.shape[0],
                         provenance={"input": type(matrix).__name__, "shape": list(coo.shape)})


def _npz_source(path: Path, weights: str) -> EdgeSource:
    if _compression(path):
        raise InputError(f"{path}: .npz files are compressed already; decompress the file "
                         "first")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{path}: not a readable .npz file ({e})") from e
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise InputError(f"{path}: not an .npz archive (a single .npy array?)")
    with npz:
        arrays = {name: npz[name] for name in npz.files}
    missing = [name for name in ("src", "dst") if name not in arrays]
    if missing:
        raise InputError(f"{path}: missing array {missing[0]!r} (an edge .npz holds src, dst "
                         f"and optionally weight; found {sorted(arrays) or 'none'})")
    if weights == "file" and "weight" not in arrays:
        raise InputError(f"{path}: weights='file' but the .npz has no 'weight' array")
    weight = arrays.get("weight") if weights != "none" else None
    source = _array_source(arrays["src"], arrays["dst"], weight, None, where=f"{path}: ",
                           provenance=_provenance(path, "npz"))
    return source


# --------------------------------------------------------------------------- entry point


def _provenance(path: Path, fmt: str) -> dict:
    return {"input": str(path), "format": fmt, "bytes": path.stat().st_size}


def _detect_format(path: Path) -> str:
    name = path.name.lower()
    if _compression(path):
        name = name[: -len(path.suffix)]
    fmt = _EXTENSIONS.get(os.path.splitext(name)[1])
    if fmt is None:
        raise InputError(f"{path}: cannot tell the format from the file name; pass --format "
                         f"(one of {', '.join(FORMATS)})")
    return fmt


def open_edge_file(path: str | os.PathLike, format: str = "auto", weights: str = "auto",
                   chunk_edges: int = DEFAULT_CHUNK_EDGES) -> EdgeSource:
    """Opens an edge file as a streaming :class:`EdgeSource`.

    Args:
        path: the input; ``.gz``, ``.bz2`` and ``.xz`` are decompressed on the fly.
        format: one of :data:`FORMATS`, or "auto" to pick by extension.
        weights: "auto" (weights when the format carries them), "none" (ignore any) or
            "file" (require them on every line).
        chunk_edges: edges per yielded chunk.

    Headers (Matrix Market, .npz) are checked now; text lines are checked as they stream,
    so a bad line raises from ``chunks()``.
    """
    if format != "auto" and format not in FORMATS:
        raise ConfigError(f"unknown format {format!r}; expected auto or one of "
                          f"{', '.join(FORMATS)}")
    if weights not in WEIGHT_MODES:
        raise ConfigError(f"unknown weights mode {weights!r}; expected one of "
                          f"{', '.join(WEIGHT_MODES)}")
    if chunk_edges < 1:
        raise ConfigError(f"chunk_edges must be positive, got {chunk_edges}")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file" if not path.exists() else
                         f"{path}: not a regular file")
    fmt = _detect_format(path) if format == "auto" else format
    if fmt == "npz":
        return _npz_source(path, weights)
    if fmt == "mtx":
        return _mtx_source(path, weights, chunk_edges)
    return _text_source(path, fmt, weights, chunk_edges)
