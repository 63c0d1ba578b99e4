#!/usr/bin/env bash
# One BERT fine-tuning step (batch 32, seq 128, 2 threads, fp32, dropout 0.1,
# AdamW) on tune's CPU backend and on PyTorch, interleaved in one run;
# ../shared/bench/peers/torch_bert_step.py is the peer (same model, batch and
# FLOP count). Each repetition of a core setting starts with the SGEMM peak of
# that setting (bench_bert_step --sgemm: 2 threads, 1024^3 and 2048^3, tune's
# GEMM path), then runs its jobs in plan order: per size, tune then PyTorch.
#
# Core settings, the same environment for both engines: "advice" sets
# OPENBLAS_CORETYPE as the tune CLI does (tune_cpu_env_advice(), printed by
# bench_bert_step --env-advice: SkylakeX or Haswell where OpenBLAS does not
# know the CPU, e.g. 0.3.21 on Intel family 6 model 207, which would pick its
# Prescott SSE3 kernels; unset where it does, e.g. Cooperlake on AMD Zen 4);
# "Haswell" sets OPENBLAS_CORETYPE=Haswell; "asis" leaves OPENBLAS_CORETYPE as
# the caller has it; any other word is used as the value.
# Thread variables (OMP_*, OPENBLAS_NUM_THREADS, OPENBLAS_L2_SIZE) are cleared
# for every run, except PyTorch's best documented setting "nt1" =
# OPENBLAS_NUM_THREADS=1 (peers README); "default" = PyTorch out of the box.
# tune sets OpenBLAS to one thread itself and runs its own OpenMP team.
#
# PLAN=quick (default; ~6-7 min on an idle 2-core machine, where the full
# 3 settings x 3 sizes x 3 engines x 3 repetitions at 10 steps take about an hour):
#   MAIN (advice: what the tune CLI runs with), REPS (3) repetitions of
#     tune and PyTorch nt1 for tiny and mini, one of each for small (REPS_SMALL,
#     1: a small pair costs ~2 min), PyTorch out of the box for tiny once;
#   asis, once, 5 timed steps after 1 warm-up: tune and PyTorch out of the box
#     (the true out-of-the-box pair) for tiny and mini.
# PLAN=full: every setting in CORETYPES ("advice Haswell asis") x SIZES x
#   {tune, PyTorch nt1, PyTorch default}, REPS repetitions, 10 steps after 3.
# PLAN=FILE: one job per line, "setting size engine reps steps warmup", engine
#   tune | torch-nt1 | torch-default; lines run in file order each repetition.
#
# Shared machines: before each job the script waits up to IDLE_WAIT (20) s
# for other processes to use at most BUSY_MAX (0.15) cores, and re-runs a job
# during which they used more, up to RETRIES (1) times; the summary keeps the
# least disturbed attempt. IDLE_WAIT=0 RETRIES=0 turns this off.
#
# Usage: bench/run_bert.sh [BUILD_DIR]     (default BUILD_DIR: build)
# Other knobs: THREADS (2), PYTHON (default: the venv of bench/hf_setup_venv.sh,
# PyTorch from PyPI as users install it; /usr/bin/python3 for Debian's
# python3-torch), NO_TORCH=1. Writes bench/out/bert-<UTC time>.jsonl and prints
# the Markdown summary of bench/summarize_bert.py. Quote figures from a
# -Dbuildtype=release build on an otherwise idle machine (see foreign_cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
exe=$build/bench/bench_bert_step
if [ ! -d "$build" ]; then
    echo "build first: meson setup $build -Dbuildtype=release && ninja -C $build" >&2
    exit 2
fi
ninja -C "$build" bench/bench_bert_step >/dev/null
peers=../shared/bench/peers
py=${PYTHON:-$(bench/hf_setup_venv.sh)}
reps=${REPS:-3}
reps_small=${REPS_SMALL:-1}
threads=${THREADS:-2}
plan=${PLAN:-quick}
main=${MAIN:-advice}
idle_wait=${IDLE_WAIT:-20}
busy_max=${BUSY_MAX:-0.15}
retries=${RETRIES:-1}
mkdir -p bench/out
out=bench/out/bert-$(date -u +%Y%m%dT%H%M%SZ).jsonl
tmp=$(mktemp -d /tmp/tune-bench-bert-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

case $plan in
quick)
    cat >"$tmp/plan" <<EOF
$main tiny  tune          $reps 10 3
$main tiny  torch-nt1     $reps 10 3
$main tiny  torch-default 1     10 3
$main mini  tune          $reps 10 3
$main mini  torch-nt1     $reps 10 3
$main small tune          $reps_small 10 3
$main small torch-nt1     $reps_small 10 3
asis    tiny  tune          1 5 1
asis    tiny  torch-default 1 5 1
asis    mini  tune          1 5 1
asis    mini  torch-default 1 5 1
EOF
    ;;
full)
    for ct in ${CORETYPES:-advice Haswell asis}; do
        for size in ${SIZES:-tiny mini small}; do
            for eng in tune torch-nt1 torch-default; do
                echo "$ct $size $eng $reps 10 3"
            done
        done
    done >"$tmp/plan"
    ;;
*)
    [ -f "$plan" ] || { echo "PLAN must be quick, full or a file" >&2; exit 2; }
    grep -v '^[[:space:]]*\(#\|$\)' "$plan" >"$tmp/plan"
    ;;
esac

torch=1
if [ "${NO_TORCH:-0}" = 1 ] || ! "$py" -c "import torch" 2>/dev/null; then
    echo "PyTorch skipped (NO_TORCH=1, or $py cannot import torch: apt-get install" \
        "python3-torch): tune alone" >&2
    torch=0
fi

# Runs the peer script for one size and adds to its lines: engine, peak RSS
# (and RSS right after import torch), the OpenBLAS core the process loaded
# (torch links the same libopenblas), and the CPU other processes used while
# it ran (as bench_bert_step's foreign_cpu, but over the whole script).
cat >"$tmp/torch_wrap.py" <<'PY'
import contextlib, ctypes, io, json, os, resource, runpy, sys, time
import torch  # noqa: F401  (first, so that the RSS after import can be recorded)

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None

def blas_core():
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if "openblas" in path and ".so" in path:
            try:
                f = ctypes.CDLL(path).openblas_get_corename
                f.restype = ctypes.c_char_p
                return f().decode()
            except (OSError, AttributeError):
                pass
    return None

def cpu_sample():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    t = os.times()
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK"), t.user + t.system

rss_import = rss_kib()
script = sys.argv[1]
sys.argv = [script] + sys.argv[2:]
buf = io.StringIO()
busy0, self0 = cpu_sample()
wall0 = time.monotonic()
with contextlib.redirect_stdout(buf):
    runpy.run_path(script, run_name="__main__")
wall = time.monotonic() - wall0
busy1, self1 = cpu_sample()
extra = dict(engine="torch", max_rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
             rss_after_import_kib=rss_import, blas_core=blas_core(),
             self_cpu=round((self1 - self0) / wall, 2),
             foreign_cpu=round(((busy1 - busy0) - (self1 - self0)) / wall, 2))
for line in buf.getvalue().splitlines():
    if line.startswith("{"):
        rec = json.loads(line)
        rec.update(extra)
        print(json.dumps(rec), flush=True)
PY

clean_env=(env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS -u OMP_WAIT_POLICY -u OPENBLAS_L2_SIZE)

# tag SETTING TORCH_ENV REP ATTEMPT: prefixes each JSON line with the run's labels.
tag() {
    sed "s/^{/{\"setting\": \"$1\", \"torch_env\": \"$2\", \"rep\": $3, \"attempt\": $4, /"
}

lscpu_field() { lscpu | sed -n "s/^$1:[[:space:]]*//p" | head -n1; }
buildtype=$("$py" -c 'import json, sys
print(next((o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "buildtype"), "?"))' \
    "$build/meson-info/intro-buildoptions.json" 2>/dev/null || echo "?")
fmt='{"bench": "run_info", "date": "%s", "cpu": "%s (family %s model %s)", "nproc": %s, '
fmt+='"kernel": "%s", "commit": "%s", "buildtype": "%s", "cc": "%s", "plan": "%s", '
fmt+='"threads": %s, "torch": %s, "busy_max": %s, "OPENBLAS_CORETYPE_in_env": "%s"}\n'
# shellcheck disable=SC2059  # the format is assembled above from literals
printf "$fmt" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(lscpu_field 'Model name')" "$(lscpu_field 'CPU family')" \
    "$(lscpu_field Model)" "$(nproc)" "$(uname -r)" \
    "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$buildtype" \
    "$(cc --version | head -n1)" "$plan" "$threads" "$torch" "$busy_max" "${OPENBLAS_CORETYPE-}" \
    >>"$out"

# Cores' worth of CPU busy over one second (all processes, steal included).
busy_cores() {
    local a b
    a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat)
    awk -v d="$((b - a))" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", d / hz }'
}

# Waits up to IDLE_WAIT seconds for the machine to be idle before a job.
wait_idle() {
    local t0 b
    t0=$(date +%s)
    while [ $(($(date +%s) - t0)) -lt "$idle_wait" ]; do
        b=$(busy_cores)
        awk -v b="$b" -v m="$busy_max" 'BEGIN { exit !(b <= m) }' && return 0
    done
    [ "$idle_wait" = 0 ] || echo "   machine still busy after ${idle_wait} s; running anyway" >&2
}

# run_job SETTING REP SIZE ENGINE STEPS WARMUP: one job (ENGINE tune, torch-nt1,
# torch-default, or sgemm for the SGEMM peak), its JSON lines tagged
# and appended to $out. A job that other processes disturbed (foreign_cpu >
# BUSY_MAX) is run again, up to RETRIES times; every attempt is kept, tagged
# with its number, and the summary uses the least disturbed one.
run_job() {
    local ct=$1 rep=$2 size=$3 eng=$4 steps=$5 warmup=$6 attempt te fc
    for attempt in $(seq $((retries + 1))); do
        wait_idle
        : >"$tmp/line"
        if [ "$eng" = sgemm ]; then
            te=""
            "${clean_env[@]}" "${core_env[@]}" "$exe" --sgemm 1024,2048 --threads "$threads" \
                </dev/null >"$tmp/line" 2>/dev/null || echo "   sgemm failed" >&2
        elif [ "$eng" = tune ]; then
            te=""
            "${clean_env[@]}" "${core_env[@]}" "$exe" --config "$size" --threads "$threads" \
                --steps "$steps" --warmup "$warmup" </dev/null 2>&1 >"$tmp/line" \
                | grep -v "uses its 'Prescott' kernels" >&2 || true
        else
            te=${eng#torch-}
            local extra=()
            [ "$te" = default ] || extra=(OPENBLAS_NUM_THREADS=1)
            "${clean_env[@]}" "${core_env[@]}" "${extra[@]}" "$py" "$tmp/torch_wrap.py" \
                "$peers/torch_bert_step.py" --configs "$size" --no-eval --threads "$threads" \
                --steps "$steps" --warmup "$warmup" </dev/null >"$tmp/line" 2>/dev/null \
                || echo "   torch failed" >&2
        fi
        tag "$ct" "$te" "$rep" "$attempt" <"$tmp/line" >>"$out"
        fc=$(sed -n 's/.*"foreign_cpu": \(-\{0,1\}[0-9.]*\).*/\1/p' "$tmp/line" | sort -g | tail -n1)
        [ -n "$fc" ] || return 0
        awk -v f="$fc" -v m="$busy_max" 'BEGIN { exit !(f > m) }' || return 0
        echo "   (other processes used $fc cores during the run)" >&2
    done
}

settings=$(awk '!seen[$1]++ { print $1 }' "$tmp/plan")
maxrep=$(awk 'BEGIN { m = 0 } $4 > m { m = $4 } END { print m }' "$tmp/plan")
t_start=$(date +%s)
for rep in $(seq "$maxrep"); do
    for ct in $settings; do
        awk -v s="$ct" -v r="$rep" '$1 == s && $4 >= r' "$tmp/plan" >"$tmp/jobs"
        [ -s "$tmp/jobs" ] || continue
        if [ "$ct" = asis ]; then
            core_env=(-u OPENBLAS_CORETYPE)
            [ -z "${OPENBLAS_CORETYPE+x}" ] || core_env=(OPENBLAS_CORETYPE="$OPENBLAS_CORETYPE")
        elif [ "$ct" = advice ]; then
            core_env=(-u OPENBLAS_CORETYPE)
            advised=$(env -u OPENBLAS_CORETYPE "$exe" --env-advice | tr ' ' '\n' \
                | sed -n 's/^OPENBLAS_CORETYPE=//p')
            [ -z "$advised" ] || core_env=(OPENBLAS_CORETYPE="$advised")
            echo "   advice: OPENBLAS_CORETYPE=${advised:-(unset)}" >&2
        else
            core_env=(OPENBLAS_CORETYPE="$ct")
        fi
        echo "== $ct, repetition $rep ($(($(date +%s) - t_start)) s)" >&2
        run_job "$ct" "$rep" - sgemm - - </dev/null
        while read -r _ size eng _ steps warmup; do
            [ "$eng" = tune ] || [ $torch = 1 ] || continue
            echo "   $size: $eng" >&2
            run_job "$ct" "$rep" "$size" "$eng" "$steps" "$warmup" </dev/null
        done <"$tmp/jobs"
    done
done
echo "== done in $(($(date +%s) - t_start)) s: $out" >&2
"$py" bench/summarize_bert.py "$out"
