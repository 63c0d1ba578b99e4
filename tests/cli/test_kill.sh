#!/usr/bin/env bash
# Crash safety: the controller is killed with SIGKILL at 20 random moments of a
# sweep and resumed each time. Afterwards every report an objective got an
# answer for is in the store, PRAGMA integrity_check is ok, and the sweep ends
# with exactly num_samples trials, each with iterations 1..n in its last attempt.
# The synthetic trainer logs every answered report (trainer.answer_log).
# Usage: test_kill.sh TUNE_BINARY
set -u
TUNE=$1
tmp=$(mktemp -d /tmp/tune-kill-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
command -v sqlite3 >/dev/null || { echo "sqlite3 is missing: skipped"; exit 77; }
cat >"$tmp/c.json" <<JSON
{"name": "kill", "metric": "val_accuracy", "num_samples": 400, "seed": 17,
 "max_concurrent_trials": 8,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-2]}, "batch_size": {"choice": [16, 32, 64]}},
 "scheduler": {"type": "asha", "max_t": 8, "grace_period": 1, "reduction_factor": 2},
 "trainer": {"type": "synthetic", "iterations": 8, "sleep_s": 0.1,
             "answer_log": "$tmp/answers.txt"}}
JSON
exp="$tmp/exp"
RANDOM=42
kills=0
for i in $(seq 20); do
    # `tune run --resume` continues the folder, also when a kill came while it was
    # being created; the killed run's lock is gone at once.
    "$TUNE" run "$tmp/c.json" --storage "$exp" --quiet --resume >/dev/null 2>"$tmp/err" &
    pid=$!
    sleep "0.$((RANDOM % 4 + 1))$((RANDOM % 10))"
    if kill -KILL $pid 2>/dev/null; then kills=$((kills + 1)); fi
    wait $pid 2>/dev/null
done
"$TUNE" resume "$exp" --quiet >/dev/null 2>"$tmp/err" || { echo "FAIL: final resume: $(cat "$tmp/err")"; exit 1; }
db="$exp/experiment.db"
fails=0
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || { echo "FAIL: integrity_check"; fails=$((fails + 1)); }
n=$(sqlite3 "$db" "SELECT count(*) FROM trials WHERE status IN ('TERMINATED', 'STOPPED')")
total=$(sqlite3 "$db" "SELECT count(*) FROM trials")
[ "$n" = 400 ] && [ "$total" = 400 ] || { echo "FAIL: $n finished of $total trials, expected 400"; fails=$((fails + 1)); }
# Every answered report is stored.
sqlite3 -separator ' ' "$db" "SELECT trial_id, attempt, training_iteration FROM reports" | sort -u >"$tmp/stored.txt"
sort -u "$tmp/answers.txt" >"$tmp/answered.txt"
missing=$(comm -23 "$tmp/answered.txt" "$tmp/stored.txt" | wc -l)
[ "$missing" = 0 ] || { echo "FAIL: $missing answered reports missing, e.g. $(comm -23 "$tmp/answered.txt" "$tmp/stored.txt" | head -3 | tr '\n' ';')"; fails=$((fails + 1)); }
# Each trial's last attempt has iterations 1..n, matching training_iteration.
bad=$(sqlite3 "$db" "SELECT count(*) FROM trials t WHERE t.training_iteration !=
    (SELECT count(*) FROM reports r WHERE r.trial_id = t.trial_id AND r.attempt = t.attempt)
    OR t.training_iteration != (SELECT max(training_iteration) FROM reports r
    WHERE r.trial_id = t.trial_id AND r.attempt = t.attempt)")
[ "$bad" = 0 ] || { echo "FAIL: $bad trials with gaps in their reports"; fails=$((fails + 1)); }
rows=$(($(wc -l <"$exp/results.csv") - 1))
[ "$rows" = 400 ] || { echo "FAIL: results.csv has $rows rows"; fails=$((fails + 1)); }
echo "kills: $kills, answered reports: $(wc -l <"$tmp/answered.txt"), stored: $(wc -l <"$tmp/stored.txt"), attempts: $(sqlite3 "$db" 'SELECT sum(attempt) FROM trials')"
# The sweep is long enough (~8 s of sleeping trials) for the kills to land mid-run.
[ "$kills" -ge 15 ] || { echo "FAIL: only $kills of 20 kills hit a running sweep"; fails=$((fails + 1)); }
[ "$fails" = 0 ] && echo "ok: every answered report survived $kills SIGKILLs"
[ "$fails" = 0 ]
