#!/usr/bin/env bash
# The headline benchmark: `tune run` against the stack it replaces, Ray Tune
# driving Hugging Face transformers' Trainer, on the same sweep in one run on
# this machine: a reduced configs/examples/minilm_sst2_asha.json
# (bench/minilm_sweep.json): SAMPLES (12) samples of lr loguniform(3e-5, 3e-4),
# batch_size choice [16, 32], warmup_steps randint(0, 40), ASHA with grace 1,
# reduction factor 2 and max_t EPOCHS (4), one iteration = one epoch of the
# first MAX_TRAIN (1200) examples of that epoch's shuffle of SST-2 train,
# evaluated on the first MAX_EVAL dev sentences (0: all 872), max_seq_len
# MAX_SEQ_LEN (64); 2 trials at once of 1 thread each (tune:
# max_concurrent_trials 2, trainer.threads 1; Ray: 2 CPUs, 1 CPU per trial,
# torch.set_num_threads(1), OMP/MKL threads 1): bench/ray/hf_sweep.py says
# what else is the same.
#
# Odd repetitions run tune, then Ray on tune's configurations (the same 12
# trials in the same order; OWN_SAMPLES=1 lets Ray sample its own); even ones
# Ray first, on repetition 1's configurations (tune's draws are seeded, so
# every repetition draws the same), then tune. For each side: the wall time
# from launching it to the end of the sweep (tune: its process's exit; Ray:
# Tuner.fit() returning, imports and ray.init included), the time to the first
# report within 1 point of its final best (progress.csv's timestamps for tune,
# Ray's result timestamps for Ray), the best dev accuracy, trials and reports,
# the median training and evaluation seconds per epoch, the load average at
# its start and end. Goals: tune's wall ÷ Ray's ≤ 0.5, tune's best at most 1
# point below Ray's.
#
# Usage: bench/run_hf_sweep.sh [BUILD_DIR]     (default BUILD_DIR: build)
# Knobs: REPS (1), SAMPLES, EPOCHS, MAX_TRAIN, MAX_EVAL, MAX_SEQ_LEN,
#   OWN_SAMPLES=1, KEEP_ENV=1 (below), RAY_PY (default: bench/ray/setup_venv.sh --hf, which makes
#   the venv once: Ray Tune 2.60, torch 2.15, transformers 5.25 from PyPI),
#   TINY=1 (a check of the plumbing in ~1 minute: 2 samples, 2 epochs of 64
#   examples, 64 dev sentences).
# At the defaults one repetition took 14 min for tune and 20 for Ray on 2 cores
# that other jobs shared (load average 4-9); about half that on idle cores.
# Writes bench/out/hf_sweep-<UTC time>.jsonl and prints bench/summarize_hf_sweep.py's
# Markdown tables. Needs scripts/get-model's checkpoints/all-minilm-l6-v2 and ./data.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tune_bin=$build/tune/tune
if [ ! -x "$tune_bin" ]; then
    echo "build first: meson setup $build --buildtype=release && ninja -C $build" >&2
    exit 2
fi
if [ ! -f checkpoints/all-minilm-l6-v2/model.safetensors ]; then
    echo "no checkpoints/all-minilm-l6-v2: run scripts/get-model" >&2
    exit 2
fi
if [ ! -f data/sst2/train.tsv ]; then
    echo "no data/sst2: link the shared data (scripts/setup) or run scripts/get-data" >&2
    exit 2
fi
ninja -C "$build" tune/tune bench/bench_bert_step >/dev/null
if [ "${TINY:-0}" = 1 ]; then
    : "${SAMPLES:=2}" "${EPOCHS:=2}" "${MAX_TRAIN:=64}" "${MAX_EVAL:=64}"
fi
samples=${SAMPLES:-12}
epochs=${EPOCHS:-4}
max_train=${MAX_TRAIN:-1200}
max_eval=${MAX_EVAL:-0}
max_seq_len=${MAX_SEQ_LEN:-64}
# the examples of an epoch: the file's, or the first max_train of each shuffle
n_train=$(($(wc -l <data/sst2/train.tsv) - 1))
[ "$max_train" -le 0 ] || [ "$max_train" -ge "$n_train" ] || n_train=$max_train
reps=${REPS:-1}
own=${OWN_SAMPLES:-0}
py=${RAY_PY:-$(bench/ray/setup_venv.sh --hf)}

mkdir -p bench/out
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=bench/out/hf_sweep-$stamp.jsonl
work=bench/out/hf_sweep-$stamp
mkdir -p "$work"
: >"$out"

# The committed config with the sizes of this run (the same numbers go to Ray).
/usr/bin/python3 - bench/minilm_sweep.json "$work/tune.json" "$samples" "$epochs" "$max_train" \
    "$max_eval" "$max_seq_len" <<'EOF'
import json, sys
src, dst, samples, epochs, max_train, max_eval, max_seq_len = sys.argv[1:]
c = json.load(open(src))
c["num_samples"] = int(samples)
c["scheduler"]["max_t"] = int(epochs)
c["trainer"].update(epochs=int(epochs), max_train_examples=int(max_train),
                    max_eval_examples=int(max_eval), max_seq_len=int(max_seq_len))
json.dump(c, open(dst, "w"), indent=1)
EOF
"$tune_bin" validate "$work/tune.json" >/dev/null

# Both sides run in the environment the tune CLI gives itself on a clean
# machine: thread variables and OPENBLAS_L2_SIZE cleared, OPENBLAS_CORETYPE as
# `bench_bert_step --env-advice` says (unset where OpenBLAS knows the CPU). A
# caller's OPENBLAS_CORETYPE would otherwise reach tune's OpenBLAS (e.g.
# Haswell's AVX2 kernels on an AVX-512 CPU: half the speed) and not PyTorch,
# which computes with MKL. KEEP_ENV=1 runs both in the caller's environment.
env_=(env)
if [ "${KEEP_ENV:-0}" != 1 ]; then
    env_=(env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS -u OMP_WAIT_POLICY -u OPENBLAS_L2_SIZE
        -u OPENBLAS_CORETYPE -u MKL_NUM_THREADS)
    advised=$(env -u OPENBLAS_CORETYPE "$build/bench/bench_bert_step" --env-advice |
        tr ' ' '\n' | sed -n 's/^OPENBLAS_CORETYPE=//p')
    [ -z "$advised" ] || env_+=(OPENBLAS_CORETYPE="$advised")
fi
env_desc=$([ "${KEEP_ENV:-0}" = 1 ] && echo "the caller's environment" ||
    echo "advice: OPENBLAS_CORETYPE=${advised:-(unset)}")

loadavg() { awk '{printf "[%s, %s, %s]", $1, $2, $3}' /proc/loadavg; }
versions=$("$py" -c 'import ray, torch, transformers, sys
print(f"Ray {ray.__version__}, torch {torch.__version__}, transformers {transformers.__version__}, Python {sys.version.split()[0]}")')
versions="$versions; $("$tune_bin" --version | head -1)"
printf '{"kind": "meta", "samples": %d, "epochs": %d, "max_train_examples": %d, "max_eval_examples": %d, "max_seq_len": %d, "concurrency": 2, "same_configs": %s, "versions": "%s", "nproc": %d, "env": "%s"}\n' \
    "$samples" "$epochs" "$max_train" "$max_eval" "$max_seq_len" \
    "$([ "$own" = 1 ] && echo false || echo true)" "$versions" "$(nproc)" "$env_desc" >>"$out"

# run_tune REP: tune's side of one repetition, one "side" line into $out
run_tune() {
    local rep=$1 storage la0 la1 t0 t1
    storage=$work/tune-$rep
    la0=$(loadavg)
    t0=$(date +%s.%N)
    "${env_[@]}" "$tune_bin" run "$work/tune.json" --storage "$storage" --quiet \
        >"$work/tune-$rep.log" 2>&1 ||
        { cat "$work/tune-$rep.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    la1=$(loadavg)
    /usr/bin/python3 - "$storage" "$rep" "$t0" "$t1" "$la0" "$la1" "$n_train" >>"$out" <<'EOF'
import csv, json, sys
storage, rep, t0, t1, la0, la1, n_train = sys.argv[1:]
with open(f"{storage}/progress.csv") as f:
    rows = list(csv.DictReader(f))
with open(f"{storage}/results.csv") as f:
    trials = list(csv.DictReader(f))
# examples_per_s is the training throughput since the previous report: the
# rest of the iteration is the evaluation (and, in the first, the setup).
def train_s(r):
    return int(n_train) / float(r["examples_per_s"])
reports = [{"trial": int(r["trial_id"]), "iteration": int(r["training_iteration"]),
            "val_accuracy": float(r["val_accuracy"]), "timestamp": int(r["timestamp"]),
            "train_s": train_s(r), "eval_s": float(r["time_this_iter_s"]) - train_s(r)}
           for r in rows]
print(json.dumps({"kind": "side", "engine": "tune", "rep": int(rep), "t0": float(t0),
                  "wall_s": float(t1) - float(t0), "process_s": float(t1) - float(t0),
                  "load_start": json.loads(la0), "load_end": json.loads(la1),
                  "trials": len(trials), "errors": sum(t["status"] == "ERROR" for t in trials),
                  "best": max((r["val_accuracy"] for r in reports), default=None),
                  "reports": reports}))
EOF
    echo "rep $rep: tune $(/usr/bin/python3 -c "print(round($t1 - $t0))") s" >&2
}

# run_ray REP CONFIGS: Ray's side of one repetition, on the configurations of
# tune's results.csv CONFIGS (empty: Ray samples its own)
run_ray() {
    local rep=$1 la0 la1 t0 t1 configs=()
    [ -z "$2" ] || configs=(--configs "$2")
    la0=$(loadavg)
    t0=$(date +%s.%N)
    "${env_[@]}" "$py" bench/ray/hf_sweep.py "${configs[@]}" --samples "$samples" --epochs "$epochs" \
        --max-train-examples "$max_train" --max-eval-examples "$max_eval" \
        --max-seq-len "$max_seq_len" --concurrency 2 --cpus 2 --threads 1 --t0 "$t0" \
        --reports "$work/ray-$rep.jsonl" >"$work/ray-$rep.log" 2>&1 ||
        { tail -30 "$work/ray-$rep.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    la1=$(loadavg)
    /usr/bin/python3 - "$work/ray-$rep.log" "$work/ray-$rep.jsonl" "$rep" "$t0" "$t1" "$la0" \
        "$la1" >>"$out" <<'EOF'
import json, sys
log, reports_file, rep, t0, t1, la0, la1 = sys.argv[1:]
summary = json.loads(open(log).read().strip().splitlines()[-1])
reports = [json.loads(l) for l in open(reports_file)]
print(json.dumps({"kind": "side", "engine": "ray", "rep": int(rep), "t0": float(t0),
                  "wall_s": summary["wall_s"], "process_s": float(t1) - float(t0),
                  "load_start": json.loads(la0), "load_end": json.loads(la1),
                  "trials": summary["trials"], "errors": summary["errors"],
                  "order_mismatches": summary["order_mismatches"],
                  "startup_s": summary["startup_s"], "init_s": summary["init_s"],
                  "best": summary["best_val_accuracy"],
                  "reports": [{k: r[k] for k in ("trial", "iteration", "val_accuracy",
                                                 "timestamp", "report_time", "train_s",
                                                 "eval_s")}
                              for r in reports]}))
EOF
    echo "rep $rep: Ray $(/usr/bin/python3 -c "print(round($t1 - $t0))") s" >&2
}

# Odd repetitions run tune first, even ones Ray first, on the configurations
# of repetition 1 (tune's draws are seeded: every repetition has the same).
for rep in $(seq 1 "$reps"); do
    own_configs=$work/tune-$rep/results.csv
    first_configs=$work/tune-1/results.csv
    if [ "$own" = 1 ]; then
        own_configs=""
        first_configs=""
    fi
    if [ $((rep % 2)) = 1 ]; then
        run_tune "$rep"
        run_ray "$rep" "$own_configs"
    else
        run_ray "$rep" "$first_configs"
        run_tune "$rep"
    fi
done
echo "raw: $out (runs in $work)" >&2
/usr/bin/python3 bench/summarize_hf_sweep.py "$out"
