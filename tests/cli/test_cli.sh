#!/usr/bin/env bash
# End-to-end tests of the `tune` binary: real sweeps on the example configs,
# checked row by row in the CSV files, plus exit codes and error messages.
# Usage: test_cli.sh TUNE_BINARY SOURCE_ROOT
set -u
TUNE=$1
SRC=$2
tmp=$(mktemp -d /tmp/tune-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

expect_rc() { # expected_rc description cmd...
    local want=$1 what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$what: exit $rc, expected $want; stderr: $(head -c 400 "$tmp/err")"
        return 1
    fi
    ok "$what"
}

# --- version and help ---------------------------------------------------------
expect_rc 0 "--version" "$TUNE" --version && grep -q "^tune [0-9]" "$tmp/out" || fail "version text"
for c in run validate status best export; do
    expect_rc 0 "$c --help" "$TUNE" "$c" --help
done
expect_rc 2 "no command" "$TUNE"
expect_rc 2 "unknown command" "$TUNE" frobnicate

# --- validate every shipped example -------------------------------------------
# Paths in configs are relative to the current folder: the BERT ones need ./data
# (scripts/setup links it), so they are validated from the source root; one
# that fine-tunes a checkpoint under checkpoints/ needs scripts/get-model's folder.
for f in "$SRC"/configs/examples/*.json; do
    if grep -q '"type": "bert"' "$f" && [ ! -e "$SRC/data/sst2" ]; then
        echo "skip: validate $(basename "$f") (no data/ in the source tree)"
        continue
    fi
    ckpt=$(sed -n 's/.*"checkpoint": "\(checkpoints\/[^"]*\)".*/\1/p' "$f")
    if [ -n "$ckpt" ] && [ ! -d "$SRC/$ckpt" ]; then
        echo "skip: validate $(basename "$f") (no $ckpt: scripts/get-model installs it)"
        continue
    fi
    (cd "$SRC" && expect_rc 0 "validate $(basename "$f")" "$TUNE" validate "$f") || fails=$((fails + 1))
done

# --- a real sweep: quickstart (200 trials, ASHA rf 3 on 27 iterations) --------
exp="$tmp/quick"
expect_rc 0 "run quickstart" "$TUNE" run "$SRC/configs/examples/quickstart.json" --storage "$exp" --quiet
res="$exp/results.csv"
prog="$exp/progress.csv"
[ -f "$res" ] && [ -f "$prog" ] && [ -f "$exp/experiment.db" ] || fail "experiment files missing"

head -1 "$res" | tr -d '\r' >"$tmp/h"
want_header="trial_id,status,training_iteration,config/lr,config/batch_size,config/warmup_steps,config/weight_decay,val_accuracy,time_total_s,attempts,error,time_this_iter_s,time_since_restore,iterations_since_restore,timestamp,date,done,pid,hostname,node_ip,logdir"
[ "$(cat "$tmp/h")" = "$want_header" ] && ok "results.csv header" || fail "results.csv header: $(cat "$tmp/h")"
[ "$(head -1 "$prog" | tr -d '\r')" = "trial_id,training_iteration,time_total_s,val_accuracy,attempt,time_this_iter_s,time_since_restore,iterations_since_restore,timestamp,date,done,status,config/lr,config/batch_size,config/warmup_steps,config/weight_decay" ] &&
    ok "progress.csv header" || fail "progress.csv header: $(head -1 "$prog")"

# Row by row: 200 trials with ids 0..199; ASHA ends trials only at a rung (1, 3, 9)
# as STOPPED, or at max_t 27 as TERMINATED; batch sizes from the choice list.
awk -F, 'NR > 1 {
    gsub("\r", "");
    n++;
    if ($1 != n - 1) { print "trial id " $1 " at row " NR; bad++ }
    if ($2 == "STOPPED") { if ($3 != 1 && $3 != 3 && $3 != 9) { print "stopped off-rung: " $0; bad++ } }
    else if ($2 == "TERMINATED") { if ($3 != 27) { print "terminated before max_t: " $0; bad++ } }
    else { print "unexpected status: " $0; bad++ }
    if ($5 != 16 && $5 != 32 && $5 != 64) { print "batch_size: " $0; bad++ }
    if ($4 < 1e-6 || $4 >= 0.1) { print "lr out of range: " $0; bad++ }
    if ($6 < 0 || $6 > 10 || $6 != int($6)) { print "warmup_steps: " $0; bad++ }
    iters += $3; if ($2 == "STOPPED") stopped++
} END {
    if (n != 200) { print "rows: " n; bad++ }
    if (stopped < 100) { print "ASHA stopped only " stopped; bad++ }
    print iters > "/dev/stderr"; exit bad > 0
}' "$res" 2>"$tmp/iters" >"$tmp/rowcheck" && ok "results.csv rows" || fail "results.csv rows: $(head -5 "$tmp/rowcheck")"

# progress.csv: one row per report, iterations 1..n in order for every trial,
# as many rows as the iterations in results.csv.
awk -F, 'NR > 1 { gsub("\r", "");
    if ($1 != last) { if ($2 != 1) bad++; last = $1 } else if ($2 != prev + 1) bad++;
    prev = $2; rows++ } END { print rows; exit bad > 0 }' "$prog" >"$tmp/prows" &&
    [ "$(cat "$tmp/prows")" = "$(cat "$tmp/iters")" ] && ok "progress.csv rows ($(cat "$tmp/prows"))" ||
    fail "progress.csv rows: $(cat "$tmp/prows") vs $(cat "$tmp/iters")"

# best, status, export agree with the files.
expect_rc 0 "best" "$TUNE" best "$exp"
best_id=$(sed -n 's/.*"trial_id":\([0-9]*\).*/\1/p' "$tmp/out")
best_csv=$(awk -F, 'NR > 1 { gsub("\r", ""); if (!seen || $8 > m) { m = $8; id = $1; seen = 1 } } END { print id }' "$res")
[ -n "$best_id" ] && [ "$best_id" = "$best_csv" ] && ok "best trial $best_id" || fail "best: '$best_id' vs csv '$best_csv'"
expect_rc 0 "status" "$TUNE" status "$exp" && grep -q "Trials: 200 (0 PENDING, 0 RUNNING" "$tmp/out" || fail "status text: $(head -3 "$tmp/out")"
expect_rc 0 "export results" "$TUNE" export "$exp" --csv "$tmp/r.csv" && cmp -s "$tmp/r.csv" "$res" && ok "export = results.csv" || fail "export differs"
expect_rc 0 "export progress" "$TUNE" export "$exp" --csv "$tmp/p.csv" --progress && cmp -s "$tmp/p.csv" "$prog" && ok "export --progress = progress.csv" || fail "export --progress differs"

# The same seed gives the same configurations (columns 1, 4-7) in a second run at other concurrency.
sed 's/"max_concurrent_trials": 2/"max_concurrent_trials": 5/' "$SRC/configs/examples/quickstart.json" >"$tmp/q5.json"
expect_rc 0 "rerun at concurrency 5" "$TUNE" run "$tmp/q5.json" --storage "$tmp/quick5" --quiet
cut -d, -f1,4-7 "$res" >"$tmp/c1"; cut -d, -f1,4-7 "$tmp/quick5/results.csv" >"$tmp/c2"
cmp -s "$tmp/c1" "$tmp/c2" && ok "same configs at concurrency 2 and 5" || fail "configs differ across concurrency"

# pandas reads both files (when Debian's pandas is there; it is not needed to build or run tune).
if /usr/bin/python3 -c "import pandas" 2>/dev/null; then
    /usr/bin/python3 - "$res" "$prog" <<'PY' && ok "pandas reads the CSVs" || fail "pandas"
import sys, pandas as pd
r = pd.read_csv(sys.argv[1]); p = pd.read_csv(sys.argv[2])
assert len(r) == 200 and r["training_iteration"].sum() == len(p), (len(r), len(p))
assert set(r["status"]) <= {"TERMINATED", "STOPPED"}
PY
fi

# --- a second run into the same folder is refused; --resume continues it ---------
cp "$res" "$tmp/res_before.csv"
expect_rc 2 "second run into the same folder" "$TUNE" run "$SRC/configs/examples/quickstart.json" --storage "$exp" --quiet
grep -qF "already holds the experiment 'quickstart': continue it with \`tune resume $exp\`" "$tmp/err" &&
    ok "refusal names tune resume" || fail "refusal message: $(cat "$tmp/err")"
cmp -s "$res" "$tmp/res_before.csv" && ok "a refused run leaves results.csv alone" || fail "refused run changed results.csv"
expect_rc 0 "run --resume into the same folder resumes" "$TUNE" run "$SRC/configs/examples/quickstart.json" --storage "$exp" --quiet --resume
cmp -s <(cut -d, -f1-8 "$res") <(cut -d, -f1-8 "$tmp/res_before.csv") && ok "resume of a finished sweep changes nothing" || fail "resume changed results.csv"
sed 's/"num_samples": 200/"num_samples": 300/' "$SRC/configs/examples/quickstart.json" >"$tmp/q300.json"
expect_rc 2 "another config into the same folder" "$TUNE" run "$tmp/q300.json" --storage "$exp" --quiet --resume
grep -q "holds an experiment with another config" "$tmp/err" && ok "refusal message" || fail "refusal message: $(cat "$tmp/err")"
expect_rc 0 "resume DIR" "$TUNE" resume "$exp" --quiet

# --- bad configs: exit 2, one precise line, nothing written -----------------------
cat >"$tmp/bad.json" <<'JSON'
{
  "name": "bad",
  "metric": "val_accuracy",
  "num_samples": 4,
  "storage": "STORAGE",
  "param_space": {
    "lr": {"loguniform": [0, 1e-4]}
  },
  "trainer": {"type": "synthetic"}
}
JSON
sed -i "s#STORAGE#$tmp/bad_exp#" "$tmp/bad.json"
expect_rc 2 "bad bound" "$TUNE" run "$tmp/bad.json"
grep -q "^tune: $tmp/bad.json:7:27: param_space.lr: loguniform needs 0 < low < high" "$tmp/err" &&
    ok "bad bound message" || fail "bad bound message: $(cat "$tmp/err")"
[ ! -e "$tmp/bad_exp" ] && ok "nothing written for a bad config" || fail "bad config created files"
echo '{"name": "x", "schedular": {}}' >"$tmp/typo.json"
expect_rc 2 "typo key" "$TUNE" validate "$tmp/typo.json"
grep -q "1:15: schedular: unknown key (did you mean 'scheduler'?)" "$tmp/err" && ok "typo message" || fail "typo message: $(cat "$tmp/err")"
expect_rc 2 "missing file" "$TUNE" run "$tmp/nope.json"
: >"$tmp/empty.json"
expect_rc 2 "empty file" "$TUNE" validate "$tmp/empty.json"
expect_rc 2 "status of a missing folder" "$TUNE" status "$tmp/nothing"

# --- Ctrl-C: a graceful stop leaves a consistent, readable experiment ----------------
sed -e 's/"num_samples": 32/"num_samples": 400/' "$SRC/configs/examples/sleepy.json" >"$tmp/sleepy.json"
"$TUNE" run "$tmp/sleepy.json" --storage "$tmp/sleepy" --quiet >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid
rc=$?
[ "$rc" -eq 1 ] && ok "SIGINT exit 1" || fail "SIGINT exit $rc: $(cat "$tmp/err")"
grep -q "interrupted" "$tmp/err" && ok "SIGINT message" || fail "SIGINT message: $(cat "$tmp/err")"
if command -v sqlite3 >/dev/null; then
    [ "$(sqlite3 "$tmp/sleepy/experiment.db" 'PRAGMA integrity_check')" = "ok" ] && ok "integrity_check after SIGINT" || fail "integrity"
    running=$(sqlite3 "$tmp/sleepy/experiment.db" "SELECT count(*) FROM trials WHERE status = 'RUNNING'")
    [ "$running" = "0" ] && ok "no trial left RUNNING" || fail "$running trials left RUNNING"
fi
[ -f "$tmp/sleepy/results.csv" ] && ok "results.csv written after SIGINT" || fail "no results.csv after SIGINT"
expect_rc 0 "resume after SIGINT" "$TUNE" resume "$tmp/sleepy" --quiet
rows=$(($(wc -l <"$tmp/sleepy/results.csv") - 1))
[ "$rows" = 400 ] && ok "resumed sweep has all 400 trials" || fail "resumed sweep has $rows trials"
grep -qE ',(PENDING|RUNNING|ERROR),' "$tmp/sleepy/results.csv" && fail "unfinished trials after resume" || ok "every trial finished after resume"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
