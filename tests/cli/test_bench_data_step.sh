#!/usr/bin/env bash
# bench_bert_step --data: the token counts it reports are those of the real
# batches. On the tiny Hugging Face folder of tests/bert/data/hf_tiny and a
# 3-label TSV: one step over every example is one batch padded to the longest,
# so its real tokens are the sum of the examples' lengths and its padded
# tokens the count times the longest (lengths from bench_bert_logits, which
# tokenizes through the same loader); batches of one example carry no
# padding; bad arguments exit 2, too few examples exit 1.
# Usage: test_bench_data_step.sh BENCH_BERT_STEP BENCH_BERT_LOGITS SOURCE_ROOT
set -u
STEP=$1
LOGITS=$2
SRC=$3
CKPT=$SRC/tests/bert/data/hf_tiny
tmp=$(mktemp -d /tmp/tune-bench-data-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
# check STATUS OK_MESSAGE FAIL_MESSAGE
check() { if [ "$1" -eq 0 ]; then ok "$2"; else fail "$3"; fi; }

cat >"$tmp/train.tsv" <<'EOF'
sentence	label
good movie	2
the plot was boring and too long	0
a fun story	2
not very good	1
i love it	2
the worst film ever !	0
quite well acted , but the story is just a bit short	1
bad	0
EOF
n=8

# field JSON KEY: one number from a JSON line
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

"$LOGITS" "$CKPT" "$tmp/train.tsv" 16 >"$tmp/ids.json" || fail "bench_bert_logits failed"
read -r sum longest < <(python3 -c '
import json, sys
ids = json.load(open(sys.argv[1]))["ids"]
print(sum(map(len, ids)), max(map(len, ids)))' "$tmp/ids.json")

out=$("$STEP" --data "$tmp/train.tsv" --checkpoint "$CKPT" --batch $n --seq 16 --threads 1 \
    --steps 1 --warmup 0 2>"$tmp/err")
rc=$?
if [ $rc -ne 0 ]; then
    fail "one batch of all: exit $rc: $(cat "$tmp/err")"
else
    real=$(field "$out" real_tokens)
    padded=$(field "$out" padded_tokens)
    [ "$real" = "$sum" ]
    check $? "one batch of all: $real real tokens" \
        "one batch of all: real_tokens $real, expected $sum"
    [ "$padded" = $((n * longest)) ]
    check $? "one batch of all: $padded padded tokens" \
        "one batch of all: padded_tokens $padded, expected $n x $longest"
    python3 -c 'import json, math, sys
d = json.loads(sys.argv[1])
assert math.isfinite(d["loss_first"]) and d["real_tokens_per_s"] > 0, d
assert abs(d["mean_padded_len"] - d["padded_tokens"] / 8) < 0.01, d' "$out"
    check $? "finite loss, consistent means" "loss or means: $out"
fi

out=$("$STEP" --data "$tmp/train.tsv" --checkpoint "$CKPT" --batch 1 --seq 16 --threads 1 \
    --steps 6 --warmup 2 2>"$tmp/err")
rc=$?
if [ $rc -ne 0 ]; then
    fail "batches of one: exit $rc: $(cat "$tmp/err")"
elif [ "$(field "$out" real_tokens)" != "$(field "$out" padded_tokens)" ]; then
    fail "batches of one carry padding: $out"
else
    ok "batches of one: no padding"
fi

"$STEP" --data "$tmp/train.tsv" --batch 2 >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ]
check $? "--data without --checkpoint: exit 2" "--data without --checkpoint: exit $rc"
"$STEP" --data "$tmp/train.tsv" --checkpoint "$CKPT" --batch 4 --seq 16 --steps 2 --warmup 1 \
    >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "has 8 examples, fewer than the 12 of 3 steps" "$tmp/err"
check $? "too few examples: exit 1 with the reason" \
    "too few examples: exit $rc: $(cat "$tmp/err")"

[ $fails -eq 0 ] || exit 1
