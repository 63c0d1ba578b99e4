#!/usr/bin/env bash
# Tokens per second on real SST-2 batches: tune's training step
# (bench_bert_step --data, the bert trainer's step: batch assembly, zero_grad,
# forward, backward, AdamW) against transformers' own training loop
# (bench/sst2_tokens.py: Trainer over a sampler in the same order) on the same
# batches in the same order: all-MiniLM-L6-v2 (scripts/get-model), the first
# (WARMUP + STEPS) x BATCH examples of tune's seeded shuffle of SST-2 train,
# each batch padded to its longest example (dynamic padding; SST-2's sentences
# average about 13 tokens, a batch of 32 pads to about 40), truncated to SEQ.
# Reports real (non-pad) and padded tokens/s over the timed steps, and how many
# cores' worth of CPU other processes used meanwhile (foreign_cpu).
#
# Interleaved: each repetition runs, per thread count, tune then transformers
# (odd repetitions) or transformers then tune (even ones). Both run in the
# environment the tune CLI gives itself (thread variables and OPENBLAS_L2_SIZE
# cleared, OPENBLAS_CORETYPE as `bench_bert_step --env-advice` says); PyTorch
# from PyPI computes with MKL and oneDNN and takes its threads from
# torch.set_num_threads.
#
# Usage: bench/run_sst2_tokens.sh [BUILD_DIR]     (default BUILD_DIR: build)
# Knobs: REPS (3), THREADS ("1 2"), BATCH (32), SEQ (64), STEPS (30), WARMUP (3),
#   PYTHON (default: bench/ray/setup_venv.sh --hf's venv: torch 2.15 and
#   transformers 5.25 from PyPI with accelerate, which Trainer needs).
# ~6 min on 2 idle cores at the defaults. Writes bench/out/sst2_tokens-<UTC time>.jsonl
# and prints bench/summarize_sst2_tokens.py's Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
exe=$build/bench/bench_bert_step
if [ ! -d "$build" ]; then
    echo "build first: meson setup $build --buildtype=release && ninja -C $build" >&2
    exit 2
fi
ckpt=checkpoints/all-minilm-l6-v2
data=data/sst2/train.tsv
[ -f "$ckpt/model.safetensors" ] || { echo "no $ckpt: run scripts/get-model" >&2; exit 2; }
[ -f "$data" ] || { echo "no $data: link the shared data (scripts/setup)" >&2; exit 2; }
ninja -C "$build" bench/bench_bert_step >/dev/null
py=${PYTHON:-$(bench/ray/setup_venv.sh --hf)}
reps=${REPS:-3}
threads_list=${THREADS:-1 2}
batch=${BATCH:-32}
seq=${SEQ:-64}
steps=${STEPS:-30}
warmup=${WARMUP:-3}
mkdir -p bench/out
out=bench/out/sst2_tokens-$(date -u +%Y%m%dT%H%M%SZ).jsonl
: >"$out"

env_=(env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS -u OMP_WAIT_POLICY -u OPENBLAS_L2_SIZE
    -u OPENBLAS_CORETYPE)
advised=$(env -u OPENBLAS_CORETYPE "$exe" --env-advice | tr ' ' '\n' |
    sed -n 's/^OPENBLAS_CORETYPE=//p')
[ -z "$advised" ] || env_+=(OPENBLAS_CORETYPE="$advised")
echo "advice: OPENBLAS_CORETYPE=${advised:-(unset)}" >&2

# run ENGINE THREADS REP: one JSON line, tagged with the repetition, into $out
run() {
    local line
    if [ "$1" = tune ]; then
        line=$("${env_[@]}" "$exe" --data "$data" --checkpoint "$ckpt" --batch "$batch" \
            --seq "$seq" --threads "$2" --steps "$steps" --warmup "$warmup" </dev/null)
    else
        line=$("${env_[@]}" "$py" bench/sst2_tokens.py --data "$data" --checkpoint "$ckpt" \
            --batch "$batch" --seq "$seq" --threads "$2" --steps "$steps" \
            --warmup "$warmup" </dev/null 2>/dev/null | grep '^{"bench"')
    fi
    echo "${line/#\{/\{\"rep\": $3, \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", }" >>"$out"
    echo "   rep $3, $2 thread(s), $1: $(sed -n 's/.*"real_tokens_per_s": \([0-9.]*\).*/\1/p' \
        <<<"$line") real tokens/s" >&2
}

t0=$(date +%s)
for rep in $(seq "$reps"); do
    for t in $threads_list; do
        if [ $((rep % 2)) = 1 ]; then
            run tune "$t" "$rep"
            run transformers "$t" "$rep"
        else
            run transformers "$t" "$rep"
            run tune "$t" "$rep"
        fi
    done
done
echo "done in $(($(date +%s) - t0)) s: $out" >&2
/usr/bin/python3 bench/summarize_sst2_tokens.py "$out"
