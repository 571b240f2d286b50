#!/usr/bin/env bash
# Build an offline wheelhouse for installing Seraph on an air-gapped (GPU) host.
#
#   scripts/wheelhouse.sh [--python 3.12] [--out wheelhouse] [--full [--extras plot,cuda12]]
#
# By default it holds Seraph itself plus the packages a typical CUDA host image lacks:
# zarr and its companions (numcodecs, donfig, google-crc32c, msgspec). Hosts that already
# have numpy, scipy, numba, tqdm, pyyaml, packaging and typing-extensions (as CUDA images
# with CuPy do) need nothing else. --full adds every dependency, for a bare host, and with
# --extras those of the extras named (plot, cuda12, cuda13, test).
#
# Wheels are fetched for the *target* Python (--python) and manylinux x86-64, so this
# machine's Python version does not matter. On the target host:
#
#   pip install --no-index --find-links wheelhouse seraph-graph         # into an environment
#   pip install --no-index --find-links wheelhouse 'seraph-graph[plot]' # built with --extras plot
#   pip install --no-index --no-deps --target DIR wheelhouse/*.whl     # or beside a read-only one
set -euo pipefail

python_version=3.12
out=wheelhouse
full=0
extras=
while [ $# -gt 0 ]; do
    case "$1" in
        --python) python_version="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --full) full=1; shift ;;
        --extras) extras="[$2]"; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "wheelhouse.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ -n "$extras" ] && [ "$full" = 0 ]; then
    echo "wheelhouse.sh: --extras needs --full (an extra's packages come with their dependencies)" >&2
    exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}

# manylinux tags are matched exactly, so list the common ones.
platforms=()
for tag in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 \
           manylinux_2_27_x86_64 manylinux_2_28_x86_64 manylinux_2_31_x86_64 \
           manylinux_2_34_x86_64 manylinux_2_35_x86_64; do
    platforms+=(--platform "$tag")
done
download=("$py" -m pip download --quiet --only-binary=:all: --implementation cp
          --python-version "$python_version" "${platforms[@]}" -d "$out")

echo "building the seraph wheel"
"$py" -m pip wheel --quiet --no-deps --wheel-dir "$out" "$root"

if [ "$full" = 1 ]; then
    echo "fetching every dependency${extras:+ and those of $extras} for CPython $python_version"
    wheel=$(ls -t "$out"/seraph_graph-*.whl | head -1)
    "${download[@]}" "$wheel$extras"
else
    echo "fetching zarr, numcodecs, donfig, google-crc32c and msgspec for CPython $python_version"
    "${download[@]}" --no-deps zarr numcodecs donfig google-crc32c msgspec
fi

# Two versions of one package make a --no-index install fail; keep the newest.
"$py" - "$out" <<'PY'
import pathlib, re, sys
from collections import defaultdict
wheels = defaultdict(list)
for whl in pathlib.Path(sys.argv[1]).glob("*.whl"):
    wheels[re.sub(r"[-_.]+", "-", whl.name.split("-")[0]).lower()].append(whl)
for name, found in wheels.items():
    for old in sorted(found, key=lambda p: p.stat().st_mtime)[:-1]:
        print(f"removing older {old.name}")
        old.unlink()
PY
echo "wheelhouse ready: $out"
ls -1 "$out"
