#!/usr/bin/env bash
# Sweeps whose trials fail, through the CLI: a sweep where every trial ends in
# ERROR says so and exits 1; "fail_fast": true stops at the first ERROR (exit 1,
# the trial named, the rest left PENDING and resumable), and without it the
# same sweep runs to the end.
# Usage: test_failures.sh TUNE_BINARY
set -u
TUNE=$1
tmp=$(mktemp -d /tmp/tune-failures-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# count STATUS DIR: trials of DIR/results.csv with that status
count() { grep -c ",$1," "$2/results.csv"; }

# ---- every trial fails -------------------------------------------------------
cat >"$tmp/all.json" <<'JSON'
{"metric": "val_accuracy", "num_samples": 3, "seed": 1,
 "trainer": {"type": "synthetic", "iterations": 3, "fail_prob": 1}}
JSON
"$TUNE" run "$tmp/all.json" --storage "$tmp/all" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && ok "all failed: exit 1" || fail "all failed: exit $rc"
grep -q "^tune: every trial ended in ERROR (3 of 3): the sweep has no result" "$tmp/err" &&
    ok "all failed: says so" || fail "all failed: message: $(cat "$tmp/err")"
grep -q "^best:" "$tmp/out" && fail "all failed: printed a best trial" || ok "all failed: no best"

# ---- fail_fast ------------------------------------------------------------------
# fail_prob 0.05 per iteration over 5 iterations: about 1 trial in 4 fails.
cat >"$tmp/ff.json" <<'JSON'
{"metric": "val_accuracy", "num_samples": 40, "seed": 3, "max_concurrent_trials": 1,
 "fail_fast": true,
 "trainer": {"type": "synthetic", "iterations": 5, "fail_prob": 0.05}}
JSON
"$TUNE" run "$tmp/ff.json" --storage "$tmp/ff" --quiet >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && ok "fail_fast: exit 1" || fail "fail_fast: exit $rc"
grep -q "^tune: fail_fast: trial [0-9]* ended in ERROR, so the sweep stopped" "$tmp/err" &&
    ok "fail_fast: names the trial" || fail "fail_fast: message: $(cat "$tmp/err")"
[ "$(count ERROR "$tmp/ff")" = 1 ] && ok "fail_fast: one ERROR" ||
    fail "fail_fast: $(count ERROR "$tmp/ff") ERROR trials"
rows=$(($(wc -l <"$tmp/ff/results.csv") - 1))
[ "$rows" -lt 40 ] && ok "fail_fast: no trial started after it ($rows of 40 ran)" ||
    fail "fail_fast: all $rows trials ran"
# without fail_fast the same sweep runs every trial
sed 's/"fail_fast": true,//' "$tmp/ff.json" >"$tmp/nf.json"
"$TUNE" run "$tmp/nf.json" --storage "$tmp/nf" --quiet >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && ok "no fail_fast: exit 1 (trials errored)" || fail "no fail_fast: exit $rc"
[ "$(count PENDING "$tmp/nf")" = 0 ] && [ "$(count ERROR "$tmp/nf")" -gt 1 ] &&
    ok "no fail_fast: every trial ran" || fail "no fail_fast: $(count PENDING "$tmp/nf") PENDING"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
