"""Weak predictors: per-vertex state diagrams, loaded from TOML and run inside the kernels.

A weak predictor guesses from a vertex's update history whether its next update attempt
can succeed (docs/design.md, "Weak predictor and the recheck"). Each vertex holds a small
state id. In an *attempting* state the kernel tries the update and moves to ``on_success``
or ``on_failure``; in a *dormant* state it skips the vertex and moves to ``next``. Guesses
may be wrong, so the engine re-attempts every vertex skipped since its last attempt before
it reports convergence.

A diagram file looks like this (see ``configs/weak-seraph.toml``)::

    name = "weak-seraph"
    description = "..."
    initial = 0

    [states.0]
    attempt = true
    on_success = 0
    on_failure = 5

    [states.2]
    attempt = false
    next = 1

State ids are 0 .. N-1 with no gaps (N <= 128), so they index the packed table directly.

**Packed table** (:attr:`Diagram.table`, what kernels receive): ``uint8[4, N]`` with rows
``ATTEMPT`` (1 where the state attempts), ``ON_SUCCESS``, ``ON_FAILURE`` and ``NEXT``. A
row that does not apply to a state (the outcomes of a dormant state, ``next`` of an
attempting one) holds the state itself.

**Per-vertex state byte**: the low 7 bits (``STATE_MASK``) are the state id; the high bit
(``OWES``) means "skipped since its last attempt". The final re-check must attempt exactly
the vertices that owe: when a round changes nothing, the vertices that attempted in it are
converged, but a skipped one is not known to be, and its state alone does not say so,
because a dormant state may step into an attempting one (Figure 6: 2 -> 1). Kernels use
:func:`weak_skip` and :func:`weak_record`, which keep the bit, so the stepping rule lives
in one place.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np
from numba import njit

from seraph.errors import ConfigError

PREDICTORS = ("auto", "strong", "weak", "combined", "none")
#: What a sweep is told to skip with, as the kernels receive it, as bits: what the strong
#: rule proves final, what the weak diagram says may wait, both (the strong rule first), or
#: nothing.
NONE, STRONG, WEAK = 0, 1, 2
COMBINED = STRONG | WEAK
CODES = {"none": NONE, "strong": STRONG, "weak": WEAK, "combined": COMBINED}
#: The predictors that keep a weak state per vertex.
WITH_DIAGRAM = ("weak", "combined")
#: auto's weak half, where it pays (CC by label propagation on the CPU): the diagram and the
#: dense rounds before it joins the strong rule. Measured in
#: docs/benchmarks/predictors-cpu.md: a run that is still sweeping after this many rounds
#: is a high-diameter one, where sleeping vertices save whole rounds.
LATE_WEAK_DIAGRAM = "weak-patient"
LATE_WEAK_DENSE_ROUNDS = 8

ATTEMPT, ON_SUCCESS, ON_FAILURE, NEXT = range(4)  #: rows of Diagram.table
OWES = np.uint8(0x80)  #: state-byte bit: skipped since the last attempt
STATE_MASK = np.uint8(0x7F)  #: state-byte bits holding the state id
MAX_STATES = 128

_ALIASES = {"seraph": "weak-seraph"}
_TOP_KEYS = {"name", "description", "initial", "states"}
_ATTEMPT_KEYS = {"attempt", "on_success", "on_failure"}
_DORMANT_KEYS = {"attempt", "next"}


@dataclass(frozen=True, eq=False)
class Diagram:
    """A validated weak-predictor diagram; arrays are read-only and indexed by state id."""

    name: str
    description: str
    initial: int
    attempt: np.ndarray  # uint8[N]
    on_success: np.ndarray  # uint8[N]
    on_failure: np.ndarray  # uint8[N]
    next_dormant: np.ndarray  # uint8[N]

    @property
    def num_states(self) -> int:
        return len(self.attempt)

    @property
    def table(self) -> np.ndarray:
        """The packed ``uint8[4, N]`` table for kernels (a fresh writable array)."""
        return np.stack([self.attempt, self.on_success, self.on_failure, self.next_dormant])

    def dormant_states(self) -> np.ndarray:
        """Ids of the states that skip without attempting."""
        return np.flatnonzero(self.attempt == 0).astype(np.uint8)

    def to_toml(self) -> str:
        """The diagram as a TOML document that :func:`load_diagram` reads back."""
        lines = [f"name = {_toml_string(self.name)}",
                 f"description = {_toml_string(self.description)}",
                 f"initial = {self.initial}"]
        for s in range(self.num_states):
            lines += ["", f"[states.{s}]"]
            if self.attempt[s]:
                lines += ["attempt = true", f"on_success = {self.on_success[s]}",
                          f"on_failure = {self.on_failure[s]}"]
            else:
                lines += ["attempt = false", f"next = {self.next_dormant[s]}"]
        return "\n".join(lines) + "\n"


def _shipped() -> Traversable:
    """Where the shipped diagrams are: the ``seraph.configs`` package of an installed
    Seraph (the build maps the top-level ``configs/`` there), or ``configs/`` itself when
    Seraph runs from a checkout on ``PYTHONPATH``, as on a GPU host without pip access."""
    try:
        return resources.files("seraph.configs")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "configs"


def builtin_diagrams() -> list[str]:
    """Names of the diagrams shipped in ``seraph.configs`` (``seraph`` aliases weak-seraph)."""
    return sorted(Path(f.name).stem for f in _shipped().iterdir() if f.name.endswith(".toml"))


def load_diagram(path_or_name: str | os.PathLike) -> Diagram:
    """Load and validate a diagram from a TOML file path or a built-in name.

    A string without a path separator or ``.toml`` suffix is a built-in name. Raises
    ConfigError, naming the file, for anything invalid.
    """
    text = str(path_or_name)
    if isinstance(path_or_name, os.PathLike) or os.sep in text or text.endswith(".toml"):
        path = Path(path_or_name)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ConfigError(f"cannot read predictor diagram {path}: {e.strerror}") from None
        return parse_diagram(data.decode("utf-8", errors="replace"), str(path), path.stem)
    name = _ALIASES.get(text, text)
    if name not in builtin_diagrams():
        raise ConfigError(f"unknown predictor diagram {text!r}; built-in diagrams: "
                          f"{', '.join(builtin_diagrams())} (or give a path to a .toml file)")
    source = _shipped().joinpath(f"{name}.toml")
    return parse_diagram(source.read_text(encoding="utf-8"), f"{name}.toml", name)


def parse_diagram(text: str, origin: str = "<string>", default_name: str = "custom") -> Diagram:
    """Validate the TOML ``text`` of a diagram; ``origin`` names it in error messages."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{origin}: invalid TOML: {e}") from None
    return _Validator(origin).diagram(doc, default_name)


class _Validator:
    """Turns a parsed TOML document into a Diagram, or fails with ConfigError."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, message: str) -> ConfigError:
        return ConfigError(f"{self.origin}: {message}")

    def diagram(self, doc: dict, default_name: str) -> Diagram:
        self.no_unknown_keys(doc, _TOP_KEYS, "the top level")
        states = self.states(doc.get("states"))
        n = len(states)
        table = np.empty((4, n), dtype=np.uint8)
        for s, spec in states.items():
            table[:, s] = self.state(s, spec, n)
        initial = self.initial(doc, n, table[ATTEMPT])
        self.no_dormant_cycle(table)
        table.flags.writeable = False  # the rows below are views of it
        return Diagram(name=self.text(doc, "name", default_name),
                       description=self.text(doc, "description", ""), initial=initial,
                       attempt=table[ATTEMPT], on_success=table[ON_SUCCESS],
                       on_failure=table[ON_FAILURE], next_dormant=table[NEXT])

    def states(self, raw: object) -> dict[int, dict]:
        """The ``[states.N]`` tables keyed by int id, checked to be exactly 0 .. N-1."""
        if not isinstance(raw, dict) or not raw:
            raise self.fail("no states: define at least one [states.N] table")
        states = {}
        for key, spec in raw.items():
            if not (key.isdigit() and str(int(key)) == key):
                raise self.fail(f"state id {key!r} is not a non-negative integer like 0 or 5")
            if not isinstance(spec, dict):
                raise self.fail(f"states.{key} must be a table ([states.{key}])")
            states[int(key)] = spec
        if len(states) > MAX_STATES:
            raise self.fail(f"too many states: {len(states)} (at most {MAX_STATES}; the "
                            "state byte keeps one bit for the final re-check)")
        missing = sorted(set(range(len(states))) - states.keys())
        if missing:
            raise self.fail(f"state ids must be 0..{len(states) - 1} without gaps; "
                            f"missing {', '.join(map(str, missing))}")
        return states

    def state(self, s: int, spec: dict, n: int) -> list[int]:
        """The table column of state s: attempt flag and its three targets."""
        where = f"state {s}"
        if "attempt" not in spec:
            raise self.fail(f"{where}: missing 'attempt' (true or false)")
        attempt = spec["attempt"]
        if not isinstance(attempt, bool):
            raise self.fail(f"{where}: 'attempt' must be true or false, got {attempt!r}")
        keys = _ATTEMPT_KEYS if attempt else _DORMANT_KEYS
        misplaced = sorted(set(spec) & ((_ATTEMPT_KEYS | _DORMANT_KEYS) - keys))
        if misplaced:
            kind = "an attempting state has no 'next' (it moves on_success or on_failure)" \
                if attempt else "a dormant state never attempts, so it takes only 'next'"
            raise self.fail(f"{where}: {', '.join(map(repr, misplaced))} not allowed: {kind}")
        self.no_unknown_keys(spec, keys, where)
        if attempt:
            return [1, self.target(spec, "on_success", where, n),
                    self.target(spec, "on_failure", where, n), s]
        return [0, s, s, self.target(spec, "next", where, n)]

    def target(self, spec: dict, key: str, where: str, n: int) -> int:
        if key not in spec:
            raise self.fail(f"{where}: missing transition {key!r}")
        t = spec[key]
        if isinstance(t, bool) or not isinstance(t, int):
            raise self.fail(f"{where}: {key} must be a state id, got {t!r}")
        if not 0 <= t < n:
            raise self.fail(f"{where}: {key} = {t} refers to an unknown state "
                            f"(states are 0..{n - 1})")
        return t

    def initial(self, doc: dict, n: int, attempt: np.ndarray) -> int:
        if "initial" not in doc:
            raise self.fail("missing 'initial' (the state every vertex starts in)")
        s = self.target(doc, "initial", "top level", n)
        if not attempt[s]:
            raise self.fail(f"initial state {s} is dormant; it must attempt, or no vertex "
                            "would be updated in the first round")
        return s

    def no_dormant_cycle(self, table: np.ndarray) -> None:
        """Every chain of dormant steps must reach an attempting state, or a vertex that
        enters it sleeps forever (correct only thanks to the final re-check, and useless)."""
        for start in np.flatnonzero(table[ATTEMPT] == 0):
            path = [int(start)]
            while not table[ATTEMPT, path[-1]]:
                nxt = int(table[NEXT, path[-1]])
                if nxt in path:
                    cycle = path[path.index(nxt):]
                    raise self.fail(f"dormant states {' -> '.join(map(str, cycle))} -> {nxt} "
                                    "form a cycle that never reaches an attempting state")
                path.append(nxt)

    def text(self, doc: dict, key: str, default: str) -> str:
        value = doc.get(key, default)
        if not isinstance(value, str):
            raise self.fail(f"{key!r} must be a string")
        return value

    def no_unknown_keys(self, table: dict, allowed: set[str], where: str) -> None:
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise self.fail(f"unknown key(s) {', '.join(map(repr, unknown))} in {where}; "
                            f"expected {', '.join(sorted(allowed))}")


def _toml_string(s: str) -> str:
    """A TOML basic string (JSON escaping is valid TOML for every character)."""
    return json.dumps(s, ensure_ascii=False)


@njit(inline="always", cache=True)
def weak_skip(table: np.ndarray, states: np.ndarray, v: int) -> bool:
    """If vertex v is dormant, step its state, mark it ``OWES`` and return True: the caller
    skips v. Otherwise return False: the caller attempts v, then calls :func:`weak_record`."""
    s = states[v] & STATE_MASK
    if table[ATTEMPT, s]:
        return False
    states[v] = table[NEXT, s] | OWES
    return True


@njit(inline="always", cache=True)
def weak_record(table: np.ndarray, states: np.ndarray, v: int, success: bool) -> None:
    """Move attempting vertex v on by the outcome of its attempt; it no longer owes one."""
    states[v] = table[ON_SUCCESS if success else ON_FAILURE, states[v] & STATE_MASK]


@njit(inline="always", cache=True)
def weak_record_part(table: np.ndarray, states: np.ndarray, v: int, success: bool) -> None:
    """:func:`weak_record` for an attempt that read some of v's in-edges only (a vertex
    split across pages, of which a sweep held some): a debt from an earlier skip stays,
    since the rest were not attempted."""
    s = states[v]
    states[v] = table[ON_SUCCESS if success else ON_FAILURE, s & STATE_MASK] | (s & OWES)


def take_owing_pages(xp, states, initial_state, page_first, page_last):
    """The pages holding in-edges of the vertices whose state owes an attempt, which are
    reset to ``initial_state``; ``xp`` is numpy or cupy (the states stay where they are).

    A page holds in-edges of exactly the vertices between its first and last destination
    (one in between without in-edges only adds the page to the re-check), so a prefix count
    of the owing vertices finds the pages without listing the vertices."""
    owing = (states & OWES) != 0
    states[owing] = initial_state
    before = xp.concatenate((xp.zeros(1, xp.int64), xp.cumsum(owing, dtype=xp.int64)))
    return xp.flatnonzero(before[page_last + 1] - before[page_first])
