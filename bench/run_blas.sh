#!/usr/bin/env bash
# Which CBLAS should tune's CPU backend use? The same benchmarks on builds
# that differ only in -Dblas, interleaved in one run: the SGEMM peak through
# tune's GEMM path (bench_bert_step --sgemm 1024,2048) and one BERT training
# step (bench_bert_step, batch 32 x 128) for bert-tiny, bert-mini and
# bert-small. Each build runs in the environment the tune CLI would give it
# (its own --env-advice: one BLAS thread, and the kernels to force where the
# BLAS does not know the CPU, e.g. BLIS 0.9 on Zen 4), and once more as it is
# ("asis") so the cost of not taking the advice shows.
#
# Usage: bench/run_blas.sh [BLAS ...]      (default: openblas blis)
# Knobs: REPS (3) repetitions of the whole interleaved round, STEPS (5) timed
# steps after 2 warm-up steps, SIZES ("tiny mini small"), THREADS (2).
# Builds release trees in bench/out/build-<blas> (once; BLIS needs Debian's
# libblis-dev). Writes bench/out/blas-<UTC time>.jsonl and prints a Markdown
# table of medians and of each BLAS's time over the first one's.
set -euo pipefail
cd "$(dirname "$0")/.."
blases=("$@")
[ ${#blases[@]} -gt 0 ] || blases=(openblas blis)
reps=${REPS:-3}
steps=${STEPS:-5}
threads=${THREADS:-2}
read -r -a sizes <<<"${SIZES:-tiny mini small}"
mkdir -p bench/out
out=bench/out/blas-$(date -u +%Y%m%dT%H%M%SZ).jsonl

for b in "${blases[@]}"; do
    dir=bench/out/build-$b
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" --buildtype=release -Dblas="$b" -Dtests=false -Dcuda=disabled \
            -Dmpi=disabled >/dev/null
    fi
    ninja -C "$dir" bench/bench_bert_step >/dev/null
done

clean_env=(env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS -u OMP_WAIT_POLICY -u OPENBLAS_L2_SIZE
           -u OPENBLAS_CORETYPE -u BLIS_NUM_THREADS -u BLIS_ARCH_TYPE)
# One job: BLAS, environment name, and the bench's arguments; its JSON line is
# tagged with the first two and appended to $out.
job() {
    local b=$1 envname=$2
    shift 2
    local exe=bench/out/build-$b/bench/bench_bert_step adv=()
    if [ "$envname" = advice ]; then
        read -r -a adv <<<"$("${clean_env[@]}" "$exe" --env-advice)"
    fi
    "${clean_env[@]}" "${adv[@]}" "$exe" "$@" 2>/dev/null |
        while IFS= read -r line; do
            printf '{"blas": "%s", "env": "%s", "advice": "%s", "result": %s}\n' \
                "$b" "$envname" "${adv[*]}" "$line"
        done >>"$out"
}

for ((r = 1; r <= reps; r++)); do
    for envname in advice asis; do
        for b in "${blases[@]}"; do
            job "$b" "$envname" --sgemm 1024,2048 --threads "$threads"
        done
        [ "$envname" = asis ] && continue # the step only as the CLI runs it
        for s in "${sizes[@]}"; do
            for b in "${blases[@]}"; do
                job "$b" "$envname" --config "$s" --threads "$threads" --steps "$steps" \
                    --warmup 2 --no-breakdown
            done
        done
    done
    echo "run_blas: round $r of $reps done" >&2
done

/usr/bin/python3 - "$out" "${blases[0]}" <<'EOF'
import json, statistics, sys
path, base = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(path)]
groups = {}
for r in rows:
    res = r["result"]
    if res.get("bench") == "tune_sgemm":
        key = ("SGEMM " + res["shape"] + " GFLOP/s", r["env"])
        val = res["gflops_median"]
    else:
        key = ("bert-%s step ms" % res.get("config", "?"), r["env"])
        val = res["median_ms_per_step"]
    groups.setdefault(key, {}).setdefault(r["blas"], []).append((val, res.get("blas_core", "")))
blases = list(dict.fromkeys(r["blas"] for r in rows))
print("| measure | env | " + " | ".join(blases) + " | " +
      " | ".join("%s / %s" % (b, base) for b in blases if b != base) + " |")
print("|---|---|" + "---|" * len(blases) + "---|" * (len(blases) - 1))
for (name, env), per in groups.items():
    med = {b: statistics.median(v for v, _ in per[b]) for b in per}
    core = {b: per[b][0][1] for b in per}
    cells = ["%.1f (%s, n=%d)" % (med[b], core[b], len(per[b])) if b in med else "-" for b in blases]
    ratios = ["%.2f" % (med[b] / med[base]) if b in med and base in med else "-"
              for b in blases if b != base]
    print("| %s | %s | %s | %s |" % (name, env, " | ".join(cells), " | ".join(ratios)))
print("\nraw: " + path)
EOF
