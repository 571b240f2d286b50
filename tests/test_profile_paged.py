"""scripts/profile_paged.py on a small R-MAT: every subcommand runs and prints its rows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import profile_paged  # noqa: E402


@pytest.mark.parametrize("what, rows", [("rounds", "dense round 1"), ("gaps", "cc:"),
                                        ("share", "share  0.7"), ("final", "final sweeps 1"),
                                        ("once", "sssp:"), ("kernels", "phase  push")])
def test_subcommands_on_the_cpu(tmp_path, capsys, what, rows):
    profile_paged.main([what, "--scale", "11", "--workdir", str(tmp_path), "--device", "cpu",
                        "--trace-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rows in out
    if what == "rounds":
        # The lightest in-edge never leaves more open than the plain rule.
        for line in out.splitlines():
            if line.startswith(("dense round", "bottom-up round")):
                plain, lightest = (float(x.rstrip("%")) for x in line.split()[4:6])
                assert lightest <= plain
    if what == "gaps":
        assert (tmp_path / "trace-sssp.json").exists()

