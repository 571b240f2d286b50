"""scripts/bench_predictors.py on the CPU at tiny sizes: a cell per graph, algorithm and
predictor, every call's answer checked by the verifiers, logs that add up, traces."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_predictors  # noqa: E402


def test_the_predictor_study_on_the_cpu(tmp_path, capsys):
    out_json, traces = tmp_path / "p.json", tmp_path / "traces"
    rc = bench_predictors.main(["--scale", "9", "--side", "32", "--page-edges", "512",
                                "--sources", "2", "--json-out", str(out_json),
                                "--md-out", "", "--trace-dir", str(traces),
                                "--diagram", "weak-patient"])
    assert rc == 0
    cells = json.loads(out_json.read_text())["cells"]
    rows = len(bench_predictors.PREDICTORS) + 2  # and weak, combined with the patient one
    assert len(cells) == 3 * len(bench_predictors.ALGORITHMS) * rows
    for cell in cells:
        assert cell["checks"]["ok"] and 0 < cell["median"] <= cell["max"]
        assert cell["checks"]["line"] == "checked 3 of 3"  # the first call, 2 sources
        totals, log = cell["totals"], cell["round_log"]
        assert totals["rounds"] == sum(entry["rounds"] for entry in log) > 0
        if not cell["predictor"].startswith(("weak", "combined")):
            assert totals["skipped_weak"] == 0
    # On the uniform graph CC propagation sweeps pages, which the strong rule prunes.
    uniform_cc = {c["predictor"]: c["totals"] for c in cells
                  if c["graph"] == "uniform-9" and c["algorithm"] == "cc"}
    assert uniform_cc["none"]["entries"]["dense"] > 0
    assert uniform_cc["strong"]["skipped_strong"] > 0
    assert len(list(traces.glob("*.json"))) == len(cells)
    assert "| uniform-9 | cc | strong |" in capsys.readouterr().out


def test_a_run_is_the_registered_algorithm_unless_the_study_says_otherwise():
    """CC runs by propagation, whose spec adds the weak history late, so auto keeps the
    weak state beside the strong one where the backend says that pays; any other
    algorithm runs as registered."""
    from seraph.algorithms import get
    from seraph.backends import backend_class

    options, spec = bench_predictors.run_as("cc")
    assert options == {"components": "propagation"} and spec.weak_after is not None
    assert bench_predictors.run_as("sssp") == ({}, get("sssp").spec)
    pays = backend_class("cpu").weak_pays(spec)
    assert bench_predictors.state_of("auto", "cc", "cpu") == ("combined" if pays else "auto")
    assert bench_predictors.state_of("auto", "sssp", "cpu") == "auto"
    assert bench_predictors.state_of("none", "cc", "cpu") == "none"
