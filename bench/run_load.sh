#!/usr/bin/env bash
# The load benchmark (bench/load.c): 100,000 trials of the synthetic trainer, 10 reports
# each, 64 at once, with the SQLite store in a temporary folder; then every row is checked
# and resident memory is compared with its level after the first 1,000 trials.
# Usage: bench/run_load.sh [BUILD_DIR] (default: build). TRIALS, ITERATIONS and CONCURRENCY
# override the shape. Writes bench/out/load-<time>.jsonl and -rss.tsv (RSS every 0.5 s)
# and prints a Markdown summary. Takes ~30 s on a 2-core machine. Exits 1 if a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || { echo "build first: meson setup $build && ninja -C $build"; exit 2; }
ninja -C "$build" bench/load >/dev/null
mkdir -p bench/out
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=bench/out/load-$stamp.jsonl
rss=bench/out/load-$stamp-rss.tsv
trials=${TRIALS:-100000}
iterations=${ITERATIONS:-10}
concurrency=${CONCURRENCY:-64}

echo "== load: $trials trials x $iterations reports, $concurrency at once, SQLite store" >&2
rc=0
"$build/bench/load" --trials "$trials" --iterations "$iterations" --concurrency "$concurrency" \
    --rss-log "$rss" >>"$out" || rc=$?

/usr/bin/python3 - "$out" "$rss" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = r["checks"]
print(f"### Load: {r['trials']:,} trials x {r['iterations']} reports, "
      f"{r['concurrency']} concurrent, SQLite store\n")
print("| wall s | reports/s | trials/s | RSS start MB | RSS after first "
      f"{r['baseline_trials']:,} trials MB | RSS peak MB | RSS end MB | growth MB (limit 50) "
      "| libtune heap bytes/trial |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
print(f"| {r['wall_s']:.1f} | {r['reports_per_s']:,.0f} | {r['trials_per_s']:,.0f} "
      f"| {r['rss_start_mb']:.1f} | {r['rss_base_mb']:.1f} | {r['rss_peak_mb']:.1f} "
      f"| {r['rss_end_mb']:.1f} | {r['growth_mb']:.1f} | {r['lib_bytes_per_trial']:.0f} |\n")
want_t, want_r = r["trials"], r["reports"]
rows = [
    ("trial rows", c["trial_rows"], want_t),
    ("report rows", c["report_rows"], want_r),
    ("duplicated (trial_id, attempt, training_iteration)", c["duplicate_keys"], 0),
    ("trials whose iterations are not 1..R", c["bad_iteration_trials"], 0),
    ("trials without reports", c["trials_without_reports"], 0),
    ("reports without a trial", c["orphan_reports"], 0),
    ("trials not TERMINATED", c["not_terminated"], 0),
    ("PRAGMA integrity_check", c["integrity_check"], "ok"),
    ("results.csv lines", c["results_csv_lines"], want_t + 1),
    ("progress.csv lines", c["progress_csv_lines"], want_r + 1),
]
print("| check | got | want | |")
print("|---|---:|---:|---|")
for name, got, want in rows:
    print(f"| {name} | {got} | {want} | {'ok' if got == want else 'FAIL'} |")
print(f"\nAll checks: {'ok' if r['ok'] else 'FAILED'}; "
      f"growth {'under' if r['growth_mb'] < 50 else 'OVER'} 50 MB. "
      f"RSS series: {sys.argv[2]}; raw: {sys.argv[1]}")
PY
exit "$rc"
