#!/usr/bin/env bash
# `tune best DIR [--metric M] [--mode min|max] [--scope ...]` against a table
# computed by hand: five trials of a command program whose reports are known
# (loss by iteration, acc = 10 * iteration + k), one of which ends in ERROR
# with the best values of all (it is left out, as by tune_study_best()).
#
#   k  loss at iterations 1..12              last  avg      last-5  last-10  min  max
#   0  5, 1, 5 x 10                          5     56/12    5       5        1    5
#   1  4 x 11, 4.5                           4.5   48.5/12  4.1     4.05     4    4.5
#   2  2, 2, 6 x 8, 3, 3                     3     58/12    4.8     5.4      2    6
#   3  9, 8.5, 3.5 x 5, 4.5 x 5              4.5   57.5/12  4.5     4.0      3.5  9
#   4  0, then exits 1 (ERROR)
#
# (avg is Ray's running average with training_iteration as the step, which for
# iterations 1..n is the mean.) Winners, the first strictly better in trial
# order: mode min: last 2, avg 1, last-5-avg 1, last-10-avg 3, all 0;
# mode max: last 0, avg 2, last-5-avg 0, last-10-avg 2, all 3.
# Usage: test_best.sh TUNE
set -u
tune=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

cat >"$tmp/prog.sh" <<'SH'
#!/bin/sh
k=$1
case "$k" in
    0) seq="5 1 5 5 5 5 5 5 5 5 5 5" ;;
    1) seq="4 4 4 4 4 4 4 4 4 4 4 4.5" ;;
    2) seq="2 2 6 6 6 6 6 6 6 6 3 3" ;;
    3) seq="9 8.5 3.5 3.5 3.5 3.5 3.5 4.5 4.5 4.5 4.5 4.5" ;;
    *) echo 'tune-report {"loss": 0, "acc": 1000}'; exit 1 ;;
esac
i=0
for v in $seq; do
    i=$((i + 1))
    echo "tune-report {\"loss\": $v, \"acc\": $((10 * i + k))}"
done
SH
chmod +x "$tmp/prog.sh"
cat >"$tmp/cfg.json" <<JSON
{"name": "best", "metric": "loss", "mode": "min", "num_samples": 1, "seed": 1,
 "max_concurrent_trials": 2, "max_failures": 0,
 "param_space": {"k": {"grid_search": [0, 1, 2, 3, 4]}},
 "trainer": {"type": "command", "argv": ["$tmp/prog.sh", "{k}"]}}
JSON
"$tune" run "$tmp/cfg.json" --storage "$tmp/exp" --quiet >"$tmp/run.out" 2>&1
[ -f "$tmp/exp/results.csv" ] || { echo "FAIL: the sweep did not run: $(cat "$tmp/run.out")"; exit 1; }

# check WHAT TRIAL SCORE ITERATION ARGS...: tune best's trial, score and report.
check() {
    local what=$1 trial=$2 score=$3 iter=$4
    shift 4
    if ! "$tune" best "$tmp/exp" "$@" >"$tmp/best.json" 2>"$tmp/best.err"; then
        fail "$what: exit $? ($(cat "$tmp/best.err"))"
        return
    fi
    python3 - "$tmp/best.json" "$trial" "$score" "$iter" <<'PY' && ok "$what" || fail "$what: $(cat "$tmp/best.json")"
import json, sys
b = json.load(open(sys.argv[1]))
trial, score, it = int(sys.argv[2]), eval(sys.argv[3]), int(sys.argv[4])
assert b["trial_id"] == trial, b
assert abs(b["score"] - score) < 1e-12, (b["score"], score)
assert b["training_iteration"] == it, b
k = b["config"]["k"]
assert k == trial and b["status"] == "TERMINATED" and b["attempt"] == 1, b
# every metric of the chosen report, as the program printed it
assert b["metrics"]["acc"] == 10 * it + k, b
assert b["time_total_s"] > 0, b
PY
}

check "default: the experiment's metric and mode, scope last" 2 3 12
check "min last" 2 3 12 --scope last
check "min avg" 1 48.5/12 12 --scope avg --mode min
check "min last-5-avg" 1 4.1 12 --scope last-5-avg
check "min last-10-avg" 3 4.0 12 --scope last-10-avg
check "min all: the report that reached the best value" 0 1 2 --scope all
check "max last" 0 5 12 --mode max
check "max avg" 2 58/12 12 --mode max --scope avg
check "max last-5-avg" 0 5 12 --mode max --scope last-5-avg
check "max last-10-avg" 2 5.4 12 --mode max --scope last-10-avg
check "max all" 3 9 1 --mode max --scope all
check "another metric: acc, max, last" 3 123 12 --metric acc --mode max
check "another metric: acc, min, all" 0 10 1 --metric acc --mode min --scope all

"$tune" best "$tmp/exp" --scope median >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "expected last, avg, last-5-avg, last-10-avg or all" "$tmp/err" &&
    ok "an unknown scope is a usage error naming the scopes" || fail "bad scope: $(cat "$tmp/err")"
"$tune" best "$tmp/exp" --mode sideways >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "expected max or min" "$tmp/err" && ok "a bad mode is a usage error" ||
    fail "bad mode: $(cat "$tmp/err")"
"$tune" best "$tmp/exp" --metric nope >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "no trial reported a finite value of 'nope'" "$tmp/err" &&
    ok "a metric nobody reported: not found" || fail "unknown metric: $(cat "$tmp/err")"
"$tune" best "$tmp/exp" --scope >/dev/null 2>&1
[ $? = 2 ] && ok "--scope without a value" || fail "--scope without a value"

# `tune export --csv -` writes the same bytes to standard output.
"$tune" export "$tmp/exp" --csv - >"$tmp/stdout.csv" && cmp -s "$tmp/stdout.csv" "$tmp/exp/results.csv" &&
    ok "export --csv - is results.csv" || fail "export --csv - differs"
"$tune" export "$tmp/exp" --csv - --progress >"$tmp/stdout.csv" &&
    cmp -s "$tmp/stdout.csv" "$tmp/exp/progress.csv" && ok "export --csv - --progress is progress.csv" ||
    fail "export --csv - --progress differs"
[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
