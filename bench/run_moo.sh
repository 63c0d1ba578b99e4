#!/usr/bin/env bash
# NSGA-II against Optuna 5.0's NSGAIISampler on ZDT1 and ZDT2 (30 variables,
# 200 evaluations), interleaved seed by seed in one run: bench/moo_bench and
# bench/optuna_moo.py, each seed's tune run right before Optuna's with the
# same seed. Prints, per problem, the median hypervolume (reference point
# (11, 11)) with its range over the seeds, and the median over seeds of each
# run's median time per suggestion (wall and CPU), side by side.
# Usage: bench/run_moo.sh [BUILD_DIR] (default: build). SEEDS (default 20),
# EVALS (200). Writes bench/out/moo-<time>.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || { echo "build first: meson setup $build && ninja -C $build"; exit 2; }
ninja -C "$build" bench/moo_bench >/dev/null
mb=$build/bench/moo_bench
py=${PYTHON:-$(bench/hf_setup_venv.sh)} # Optuna from PyPI (PYTHON= another)
$py -c "import optuna" 2>/dev/null || { echo "Optuna missing from $py (bench/hf_setup_venv.sh)"; exit 2; }
mkdir -p bench/out
out=bench/out/moo-$(date -u +%Y%m%dT%H%M%SZ).jsonl
seeds=${SEEDS:-20}
evals=${EVALS:-200}
for s in $(seq 0 $((seeds - 1))); do
    for p in zdt1 zdt2; do
        "$mb" --problem $p --evals "$evals" --seeds 1 --seed0 "$s" >>"$out"
        $py bench/optuna_moo.py --problem $p --evals "$evals" --seeds 1 --seed0 "$s" >>"$out"
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >&2
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("%-5s %-7s %5s %12s %23s %14s %14s" % ("prob", "tool", "seeds", "median HV", "HV range",
                                             "ms/suggest", "CPU ms/sugg."))
for p in ("zdt1", "zdt2"):
    med = {}
    for tool in ("tune", "optuna"):
        r = [x for x in rows if x["problem"] == p and x["bench"] == tool]
        if not r:
            continue
        hv = [x["hypervolume"] for x in r]
        med[tool] = (statistics.median(hv), statistics.median(x["suggest_ms_median"] for x in r),
                     statistics.median(x["suggest_cpu_ms_median"] for x in r))
        print("%-5s %-7s %5d %12.4f %11.4f - %-9.4f %14.4f %14.4f" % (
            p, tool, len(r), med[tool][0], min(hv), max(hv), med[tool][1], med[tool][2]))
    if len(med) == 2:
        print("%-5s tune/optuna: median HV ratio %.4f, time per suggestion %.1fx faster (CPU %.1fx)" % (
            p, med["tune"][0] / med["optuna"][0], med["optuna"][1] / med["tune"][1],
            med["optuna"][2] / med["tune"][2]))
print("raw: %s" % sys.argv[1])
PY
