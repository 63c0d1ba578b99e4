#!/usr/bin/env bash
# GPU utilisation and total throughput with 1, 4 and 8 concurrent bert-tiny
# trials on one GPU: bench_bert_step_gpu --concurrent N runs N trials
# in one process, each with its own stream and cuBLAS handle, while nvidia-smi
# samples NVML's utilization.gpu (the share of each sample period in which a
# kernel was running) every 100 ms. Only samples inside the benchmark's timed
# window count (it prints the window's Unix times).
#
#   bench/gpu_util.sh [BUILD_DIR]      (default: build)
#   knobs: COUNTS="1 4 8"  CONFIG=tiny  SECONDS_PER_RUN=15  GPU=0  EXTRA="--tf32"
#
# Prints one JSON line per N: trials, examples/s in total, speed-up over one
# trial, mean/median/p10 utilisation and the number of samples; exit 1 if a
# run fails. Needs nvidia-smi (it comes with the driver).
set -euo pipefail
build=${1:-build}
counts=${COUNTS:-"1 4 8"}
config=${CONFIG:-tiny}
seconds=${SECONDS_PER_RUN:-15}
gpu=${GPU:-0}
bench="$build/bench/bench_bert_step_gpu"
[ -x "$bench" ] || { echo "gpu_util: $bench not built (configure with -Dcuda=enabled)" >&2; exit 1; }
command -v nvidia-smi >/dev/null || { echo "gpu_util: no nvidia-smi" >&2; exit 1; }
py=$(command -v python3 || command -v /usr/bin/python3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

base=""
for n in $counts; do
    # nvidia-smi's timestamp is local time "YYYY/MM/DD HH:MM:SS.mmm": run it in UTC.
    TZ=UTC nvidia-smi -i "$gpu" --query-gpu=timestamp,utilization.gpu,memory.used \
        --format=csv,noheader,nounits -lms 100 >"$tmp/smi-$n.csv" 2>/dev/null &
    smi=$!
    sleep 0.5
    # shellcheck disable=SC2086
    if ! "$bench" --config "$config" --concurrent "$n" --seconds "$seconds" --warmup 5 \
            --device "$gpu" ${EXTRA:-} >"$tmp/run-$n.json"; then
        kill "$smi" 2>/dev/null || true
        echo "gpu_util: $n concurrent trials failed" >&2
        exit 1
    fi
    kill "$smi" 2>/dev/null || true
    wait "$smi" 2>/dev/null || true
    line=$("$py" - "$tmp/run-$n.json" "$tmp/smi-$n.csv" "$base" <<'PY'
import calendar, json, statistics, sys, time
run = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
t0, t1 = run["window_unix"]
util, mem = [], []
for row in open(sys.argv[2]):
    parts = [p.strip() for p in row.split(",")]
    if len(parts) < 3:
        continue
    try:
        stamp, frac = parts[0].split(".") if "." in parts[0] else (parts[0], "0")
        t = calendar.timegm(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) + float("0." + frac)
        u, m = float(parts[1]), float(parts[2])
    except ValueError:
        continue
    if t0 <= t <= t1:
        util.append(u)
        mem.append(m)
base = float(sys.argv[3]) if sys.argv[3] else run["examples_per_s"]
util.sort()
out = {"bench": "gpu_util", "config": run["config"], "precision": run["precision"],
       "trials": run["trials"], "examples_per_s": run["examples_per_s"],
       "speedup_vs_1": round(run["examples_per_s"] / base, 2),
       "util_mean": round(statistics.mean(util), 1) if util else None,
       "util_median": statistics.median(util) if util else None,
       "util_p10": util[len(util) // 10] if util else None,
       "memory_used_mib_max": max(mem) if mem else None,
       "samples": len(util), "device": run.get("device")}
print(json.dumps(out))
PY
)
    echo "$line"
    [ -n "$base" ] || base=$("$py" -c 'import json,sys; print(json.loads(sys.argv[1])["examples_per_s"])' "$line")
done
