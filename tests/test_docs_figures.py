"""Figures anyone can reproduce (issue 31): measured figures live in docs/benchmarks/, each
table beside the script under scripts/ that makes it, the commit and the date; code
comments and docstrings say why, with no commit ids and no timings."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "docs" / "benchmarks"

#: A commit id: 7 to 40 lowercase hex digits with at least one digit and one letter, not
#: part of a longer word (so 0xffffffff, float64 and sha256 are not ids).
COMMIT = re.compile(r"(?<![0-9A-Za-z_])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
                    r"(?![0-9A-Za-z_])")
#: A time figure: "0.022 s", "3.5 ms", "0.022-0.023 s", "40 ns", "2 min".
TIME = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:\s*[-\u2013]\s*\d+(?:\.\d+)?)?\s?"
                  r"(?:s|ms|us|\u00b5s|ns|sec|seconds?|min|minutes?)(?!\w)")
#: A C or CUDA comment, or a string literal (matched only to be skipped).
C_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def python_notes(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings (every bare string statement) of Python source, with
    their first line."""
    notes = [(tok.start[0], tok.string)
             for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    notes += [(node.lineno, node.value.value) for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
              and isinstance(node.value.value, str)]
    return notes


def c_notes(source: str) -> list[tuple[int, str]]:
    """The // and /* */ comments of C, C++ or CUDA source, with their first line."""
    return [(source.count("\n", 0, m.start()) + 1, m.group())
            for m in C_COMMENT.finditer(source) if not m.group().startswith('"')]


def shell_notes(source: str) -> list[tuple[int, str]]:
    return [(i, line[line.index("#"):]) for i, line in enumerate(source.splitlines(), 1)
            if "#" in line and not line.startswith("#!")]


NOTES = {".py": python_notes, ".cu": c_notes, ".cuh": c_notes, ".sh": shell_notes}


def code_files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*"))
            if p.suffix in NOTES and ".venv" not in p.parts]


def findings(path_name: str, source: str, timings: bool) -> list[str]:
    """Commit ids (and, with ``timings``, time figures) in the comments and docstrings."""
    out = []
    for line, text in NOTES[Path(path_name).suffix](source):
        for pattern in (COMMIT, TIME) if timings else (COMMIT,):
            out += [f"{path_name}:{line}: {m.group()!r}" for m in pattern.finditer(text)]
    return out


def test_code_notes_quote_no_commits_or_timings():
    found = []
    for path in code_files("seraph", "partitioner", "scripts"):
        timings = path.relative_to(ROOT).parts[0] != "scripts"
        found += findings(str(path.relative_to(ROOT)), path.read_text(), timings)
    assert not found, ("comments and docstrings say why, in a line, and point to the "
                       "benchmark doc for figures:\n" + "\n".join(found))


ISSUE_EXAMPLES = {
    "push.cu": ("#define GUESS_STEPS 3  // with the rest of b93c051's push loop it is back "
                "at 0.022-0.023 s\nconst char* t = \"0.5 s\";  /* 0x7fffffffu masks */\n"),
    "bottom_up.py": ("LOOK = 64  # a modulo every vertex had kept this loop at 3.5 ms a call\n"
                     "MASK = 0xffffffff\nNAME = 'b93c051 at 3.5 ms'  # float64, sha256\n"),
    "backend.py": ('LEVEL_PUSH_ALPHA = 4.0\n"""uniform-24 BFS took 0.060 s at alpha 20."""\n'),
}


@pytest.mark.parametrize("name, expected", [
    ("push.cu", ["'b93c051'", "'0.022-0.023 s'"]),
    ("bottom_up.py", ["'3.5 ms'"]),
    ("backend.py", ["'0.060 s'"]),
])
def test_the_issue_examples_are_found(name, expected):
    """The figures the issue quotes are caught in comments and docstrings, and code and
    string literals (hex masks, a name holding an id) are not read."""
    assert [f.split(": ", 1)[1] for f in findings(name, ISSUE_EXAMPLES[name], True)] == expected


# -- docs ------------------------------------------------------------------------------

HEADING = re.compile(r"^(#{1,6}) ")
TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
SCRIPT = re.compile(r"scripts/([\w.-]+)")
#: A commit as a benchmark doc names it: an id, or "git ID" (an id may be all digits).
RUN_COMMIT = re.compile(rf"{COMMIT.pattern}|\b(?:git|commit) [0-9a-f]{{7,40}}\b")
DATE = re.compile(r"(?<!\d)20\d\d-\d\d-\d\d(?!\d)")


def table_scopes(text: str) -> list[tuple[int, list[str]]]:
    """For each markdown table (a header line, then a rule of dashes): its first line and
    the texts that may describe it, nearest first: its own section, then the opening text
    of each section above it (up to that section's first subheading)."""
    lines = text.splitlines()
    in_code, headings = False, []
    for i, line in enumerate(lines):
        in_code ^= line.startswith("```")
        if not in_code and HEADING.match(line):
            headings.append(i)
    starts = sorted({0, *headings})
    ends = dict(zip(starts, [*starts[1:], len(lines)], strict=True))
    scopes = []
    for i in range(1, len(lines)):
        if not (lines[i - 1].startswith("|") and TABLE_RULE.match(lines[i])
                and (i < 2 or not lines[i - 2].startswith("|"))):
            continue
        enclosing, level = [], 7
        for start in reversed([s for s in starts if s < i]):
            heading = HEADING.match(lines[start])
            start_level = len(heading.group(1)) if heading else 0
            if start_level < level or not enclosing:
                enclosing.append("\n".join(lines[start:ends[start]]))
                level = start_level
        scopes.append((i, enclosing))
    return scopes


def provenance_gaps(text: str) -> list[str]:
    """Each table's run is told by the nearest of its scopes that gives a date: that text
    must also name a script under scripts/ that exists, and a commit id. A section marked
    ``<!-- quoted: SOURCE -->`` quotes figures measured elsewhere (an issue's targets)."""
    gaps = []
    for line, scopes in table_scopes(text):
        if "<!-- quoted:" in scopes[0]:
            continue
        run = next((scope for scope in scopes if DATE.search(scope)), None)
        if run is None:
            gaps.append(f"line {line}: lacks a date")
            continue
        scripts = [s for s in SCRIPT.findall(run) if (ROOT / "scripts" / s).is_file()]
        lacks = [what for what, ok in (("a scripts/ command", scripts),
                                       ("a commit", RUN_COMMIT.search(run))) if not ok]
        if lacks:
            gaps.append(f"line {line}: its run lacks {', '.join(lacks)}")
    return gaps


@pytest.mark.parametrize("doc", sorted(BENCHMARKS.glob("*.md")), ids=lambda p: p.name)
def test_every_benchmark_table_names_its_script_commit_and_date(doc):
    gaps = provenance_gaps(doc.read_text())
    assert not gaps, f"{doc.name}: tables without their provenance:\n" + "\n".join(gaps)


def test_a_table_without_provenance_is_found():
    doc = ("# Title\n\nCommand: `python scripts/bench.py --json-out x.json`, at 1a2b3c4, "
           "2026-11-26.\n\n## Kept\n\n| a | b |\n| --- | ---: |\n| 1 | 2 |\n\n"
           "## Probe\n\n### Deeper (2026-11-27)\n\n| a | b |\n|---|---|\n| 3 | 4 |\n\n"
           "# Other\n\nA probe, not kept (2026-11-26, 1a2b3c4).\n\n| c |\n| --- |\n| 5 |\n"
           "\n## Targets\n\n<!-- quoted: issue 21 -->\n\n| d |\n| --- |\n| 6 |\n")
    assert provenance_gaps(doc) == ["line 15: its run lacks a scripts/ command, a commit",
                                    "line 23: its run lacks a scripts/ command"]


@pytest.mark.parametrize("doc", sorted(BENCHMARKS.glob("*.md")), ids=lambda p: p.name)
def test_no_figure_cites_a_probe_that_was_not_kept(doc):
    """A figure whose probe was not kept is re-measured by a kept script, or deleted."""
    found = [f"{doc.name}:{n}" for n, line in enumerate(doc.read_text().splitlines(), 1)
             if re.search(r"not kept|\.probe/", line)]
    assert not found, "\n".join(found)


def test_top_docs_quote_no_commit_ids():
    """README and the design docs state what holds now; history and figures live in
    docs/benchmarks/ with their commits."""
    found = [f"{p.name}:{n}: {m.group()}"
             for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
             for n, line in enumerate(p.read_text().splitlines(), 1)
             for m in COMMIT.finditer(line)]
    assert not found, "\n".join(found)
