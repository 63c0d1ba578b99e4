#!/usr/bin/env bash
# The controller's capacity under MPI: worker ranks run the synthetic trainer
# with no sleep, so every trial reports as fast as the controller answers
# (each answer after its report is committed to SQLite, as in a real run).
# Prints reports per second for each (ranks, trials per rank) and the number
# of workers one controller can serve at a given report rate.
#   bench/run_mpi.sh [BUILD_DIR]      (default build; RANKS="3 5 9" PER_RANK="1 4")
set -euo pipefail
build=${1:-build}
tune="$build/tune/tune"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d /tmp/tune-mpibench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/c.json" <<'JSON'
{"name": "mpi-capacity", "metric": "val_accuracy", "num_samples": 64, "seed": 1,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-2]}},
 "trainer": {"type": "synthetic", "iterations": 500, "noise": 0}}
JSON
mkdir -p bench/out
out="bench/out/mpi-$(date -u +%Y%m%dT%H%M%SZ).txt"
echo "machine: $(nproc) cores; $(lscpu | sed -n 's/^Model name: *//p')" | tee "$out"
printf "%-6s %-9s %-8s %-9s %s\n" ranks per_rank reports wall_s reports/s | tee -a "$out"
for ranks in ${RANKS:-3 5 9}; do
    for per in ${PER_RANK:-1 4}; do
        rm -rf "$tmp/exp"
        t0=$(date +%s.%N)
        mpirun -n "$ranks" --oversubscribe "$tune" run "$tmp/c.json" --storage "$tmp/exp" \
            --quiet --trials-per-rank "$per" >/dev/null 2>&1
        t1=$(date +%s.%N)
        n=$(sqlite3 "$tmp/exp/experiment.db" "SELECT count(*) FROM reports")
        python3 -c "w=$t1-$t0; print(f'%-6s %-9s %-8s %-9.2f %.0f' % ($ranks, $per, $n, w, $n / w))" | tee -a "$out"
    done
done
cat <<'TXT' | tee -a "$out"
Reading it: one controller answers C reports/s (the largest figure above is a
lower bound: here the workers share the controller's cores). A worker that
reports once every T seconds (an epoch, an eval_every) loads it by 1/T, so one
controller serves about C * T workers: e.g. at C = 5000/s and one report per
10 s, 50,000 workers; the store's commit, not MPI, is the limit.
TXT
echo "written: $out"
