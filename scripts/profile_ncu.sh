#!/usr/bin/env bash
# Nsight Compute profiles of the CUDA kernels that take the time of paged runs: BFS's
# bottom-up rounds (pull_unsettled) and pushes (push_frontier), SSSP's window sweeps
# (pull_persistent) and bottom-up rounds. Each wraps one run of
# `profile_paged.py once` on bench_gpu.py's R-MAT (built in --workdir if missing).
#
#   bash scripts/profile_ncu.sh [OUT_DIR] [SCALE]      (defaults: build/ncu, 22)
#
# --clock-control none: ncu otherwise locks the GPU's clocks to base while it profiles,
# which changes the card's settings (not ours to change on a shared or lent machine). So
# its figures are at the clocks the card runs at, as ncu's warning says.
set -euo pipefail
out=${1:-build/ncu}
scale=${2:-22}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
once() { python3 "$here/profile_paged.py" once --scale "$scale" --alg "$@"; }
once bfs  # builds the store and compiles the kernels before anything is profiled
for job in "bfs pull_unsettled 3" "bfs push_frontier 6" "sssp pull_persistent 4" \
           "sssp pull_unsettled 2"; do
    read -r alg kernel count <<< "$job"
    ncu --clock-control none -k "regex:$kernel" -c "$count" \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
        --section LaunchStats --section WarpStateStats \
        "$(command -v python3)" "$here/profile_paged.py" once --scale "$scale" --alg "$alg" \
        > "$out/$alg-$kernel.txt"
    echo "== $alg $kernel ($out/$alg-$kernel.txt)"
    grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per" \
        "$out/$alg-$kernel.txt"
done
