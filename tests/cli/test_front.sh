#!/usr/bin/env bash
# `tune best DIR` on an experiment of two objectives prints its Pareto front,
# checked against a front computed by hand. A command program reports each
# trial k's acc (maximised) and lat (minimised):
#
#   k   acc    lat   on the front?
#   0   0.80   10    yes
#   1   0.85   20    yes (equal to 2: duplicates are both on it)
#   2   0.85   20    yes
#   3   0.90   40    yes
#   4   0.70   5     yes (smallest lat; 10 ties it with a lower acc)
#   5   0.90   50    no: 3 has the same acc and a smaller lat
#   6   0.75   12    no: 0 is better in both
#   7   0.95   80    yes (largest acc among finished trials)
#   8   0.99   -     no: lat missing, dominated by every trial that has both
#   9   1.00   1     no: exits 1 (ERROR), left out though it dominates all
#  10   0.60   5     no: 4 has the same lat and a larger acc
#
# Front, best first by acc (the first objective): 7, 3, 1, 2, 0, 4.
# `--metric lat` ranks by lat alone, in lat's own direction (min): 4 (the
# first of 4 and 10). --mode or --scope without --metric is a usage error.
# Usage: test_front.sh TUNE
set -u
tune=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

cat >"$tmp/prog.sh" <<'SH'
#!/bin/sh
case "$1" in
    0) echo 'tune-report {"acc": 0.80, "lat": 10}' ;;
    1) echo 'tune-report {"acc": 0.85, "lat": 20}' ;;
    2) echo 'tune-report {"acc": 0.85, "lat": 20}' ;;
    3) echo 'tune-report {"acc": 0.90, "lat": 40}' ;;
    4) echo 'tune-report {"acc": 0.70, "lat": 5}' ;;
    5) echo 'tune-report {"acc": 0.90, "lat": 50}' ;;
    6) echo 'tune-report {"acc": 0.75, "lat": 12}' ;;
    7) echo 'tune-report {"acc": 0.95, "lat": 80}' ;;
    8) echo 'tune-report {"acc": 0.99}' ;;
    9) echo 'tune-report {"acc": 1.00, "lat": 1}'; exit 1 ;;
    10) echo 'tune-report {"acc": 0.60, "lat": 5}' ;;
esac
SH
chmod +x "$tmp/prog.sh"
cat >"$tmp/cfg.json" <<JSON
{"name": "front", "metric": ["acc", "lat"], "mode": ["max", "min"], "num_samples": 1,
 "seed": 1, "max_concurrent_trials": 2, "max_failures": 0,
 "param_space": {"k": {"grid_search": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}},
 "trainer": {"type": "command", "argv": ["$tmp/prog.sh", "{k}"]}}
JSON
"$tune" run "$tmp/cfg.json" --storage "$tmp/exp" --quiet >"$tmp/run.out" 2>&1
[ -f "$tmp/exp/results.csv" ] || { echo "FAIL: the sweep did not run: $(cat "$tmp/run.out")"; exit 1; }
[ "$(grep -c ',ERROR,' "$tmp/exp/results.csv")" -eq 1 ] || fail "expected one ERROR trial"

# The front: one JSON object a line, in a list.
if "$tune" best "$tmp/exp" >"$tmp/front.json" 2>"$tmp/front.err"; then
    got=$(sed -n 's/.*"config":{"k":\([0-9]*\)}.*/\1/p' "$tmp/front.json" | tr '\n' ' ')
    [ "$got" = "7 3 1 2 0 4 " ] || fail "front: trials k = '$got', expected '7 3 1 2 0 4 '"
    head -c1 "$tmp/front.json" | grep -q '\[' || fail "the front is not a JSON list"
    tail -n1 "$tmp/front.json" | grep -q '}]$' || fail "the front does not end the list"
    grep -q '"k":3}.*"objectives":{"acc":0.9,"lat":40},"modes":{"acc":"max","lat":"min"}' \
        "$tmp/front.json" || fail "trial k=3: objectives or modes missing: $(cat "$tmp/front.json")"
    grep -q '"k":0}.*"metrics":{.*"acc":0.8' "$tmp/front.json" || fail "trial k=0: metrics missing"
    [ "$fails" -eq 0 ] && ok "tune best prints the Pareto front: k = $got"
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d) == 6' \
            "$tmp/front.json" || fail "the front is not a JSON list of 6 trials"
    fi
else
    fail "tune best exited $?: $(cat "$tmp/front.err")"
fi

# One metric of the two: ranked in its own direction.
"$tune" best "$tmp/exp" --metric lat >"$tmp/lat.json" 2>&1 || fail "tune best --metric lat: $(cat "$tmp/lat.json")"
grep -q '"config":{"k":4}.*"mode":"min".*"score":5' "$tmp/lat.json" ||
    fail "tune best --metric lat: $(cat "$tmp/lat.json")"
"$tune" best "$tmp/exp" --metric acc --mode min >"$tmp/accmin.json" 2>&1 || fail "--metric acc --mode min"
grep -q '"config":{"k":10}' "$tmp/accmin.json" || fail "tune best --metric acc --mode min: $(cat "$tmp/accmin.json")"
[ "$fails" -eq 0 ] && ok "tune best --metric ranks by one objective (lat: min by default)"

"$tune" best "$tmp/exp" --mode min >/dev/null 2>"$tmp/usage.err"
rc=$?
[ $rc -eq 2 ] || fail "--mode without --metric on two objectives exited $rc (expected 2)"
grep -q "2 objectives" "$tmp/usage.err" || fail "unexpected message: $(cat "$tmp/usage.err")"
"$tune" best "$tmp/exp" --scope all >/dev/null 2>&1
[ $? -eq 2 ] || fail "--scope without --metric on two objectives must exit 2"
"$tune" best --help | grep -q "Pareto" || fail "tune best --help does not mention the Pareto front"
[ "$fails" -eq 0 ] && ok "tune best: --mode and --scope need --metric with several objectives"

[ "$fails" -eq 0 ] || exit 1
echo "test_front: all checks passed"
