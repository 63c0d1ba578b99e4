#!/usr/bin/env bash
# The searchers against Optuna 5.0's samplers, side by side in one run:
#   1. Branin, Hartmann-6 and the 27-step synthetic learning curve at 50 and 200
#      evaluations, SEEDS seeds (default 20): tune's random, tpe, tpe-mv and, when
#      built, sobol, lhs and gp; Optuna's RandomSampler and TPESampler (and its
#      multivariate TPE with OPTUNA_MV=1), and its GPSampler at 50 evaluations
#      only (its time per trial grows with the history), seed by seed
#      interleaved with tune's gp so that both see the same load
#   2. time per suggestion with 1,000 finished trials, 4 parameters (Optuna part b's
#      space and window), REPS runs of tune (default 3) and one of Optuna
# Usage: bench/run_search.sh [BUILD_DIR] (default: build). Writes
# bench/out/search-<time>.jsonl and prints bench/summarize_search.py's tables.
# Takes ~20 min on 2 idle cores (an hour when they are busy), nearly all of it Optuna's
# TPE and GP; QUICK=1 (5 seeds, 1 timing run) a few minutes; GP_ONLY=1 runs the GP
# comparison alone (~5 min with 20 seeds). The timing lines also carry bench/run's "ms_per_suggest".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || { echo "build first: meson setup $build && ninja -C $build"; exit 2; }
ninja -C "$build" bench/search_bench >/dev/null
sb=$build/bench/search_bench
py=${PYTHON:-$(bench/hf_setup_venv.sh)} # Optuna from PyPI (PYTHON= another)
$py -c "import optuna" 2>/dev/null || { echo "Optuna missing from $py (bench/hf_setup_venv.sh)"; exit 2; }
mkdir -p bench/out
out=bench/out/search-$(date -u +%Y%m%dT%H%M%SZ).jsonl
seeds=${SEEDS:-20}
reps=${REPS:-3}
if [ "${QUICK:-0}" = 1 ]; then # bench/run's quick mode: a few minutes
    seeds=${SEEDS:-5}
    reps=${REPS:-1}
fi

echo "== 1. regret: $seeds seeds, budgets 50 and 200" >&2
for p in branin hartmann6 curve; do
    others="random tpe tpe-mv sobol lhs"
    [ "${GP_ONLY:-0}" = 1 ] && others=""
    for s in $others; do
        # searchers that are not built in exit 2 with a message: skip them
        if ! "$sb" quality --searcher $s --problem $p --seeds "$seeds" >>"$out" 2>"$out.err"; then
            grep -q "not built in" "$out.err" && echo "   $s: not built, skipped" >&2 || { cat "$out.err" >&2; exit 1; }
        fi
    done
    opt="random tpe"
    [ "${OPTUNA_MV:-0}" = 1 ] && opt="$opt tpe-mv"
    [ "${GP_ONLY:-0}" = 1 ] && opt=""
    for s in $opt; do
        echo "   $p: Optuna $s" >&2
        $py bench/optuna_search.py quality --sampler $s --problem $p --seeds "$seeds" >>"$out"
    done
    # GP: one seed of each at a time, so that both time their trials under the same load
    if "$sb" quality --searcher gp --problem $p --seeds 1 --budgets 1 >/dev/null 2>"$out.err"; then
        echo "   $p: gp and Optuna gp, interleaved" >&2
        for ((sd = 0; sd < seeds; sd++)); do
            "$sb" quality --searcher gp --problem $p --seed0 $sd --seeds 1 >>"$out"
            $py bench/optuna_search.py quality --sampler gp --problem $p --budgets 50 \
                --seed0 $sd --seeds 1 >>"$out"
        done
    else
        grep -q "not built in" "$out.err" && echo "   gp: not built, skipped" >&2 || { cat "$out.err" >&2; exit 1; }
    fi
done
rm -f "$out.err"

if [ "${GP_ONLY:-0}" != 1 ]; then
    echo "== 2. time per suggestion, 1,000 finished trials, 4 parameters" >&2
    for i in $(seq "$reps"); do
        "$sb" timing --searcher tpe >>"$out"
        "$sb" timing --searcher tpe-mv >>"$out"
    done
    $py bench/optuna_search.py timing >>"$out"
fi

$py bench/summarize_search.py "$out"
echo "raw results: $out" >&2
