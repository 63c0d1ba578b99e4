#!/usr/bin/env bash
# Day-two safety of an experiment folder, through the CLI:
#  1. one controller per folder: 20 rounds of two `tune run` and a `tune resume`
#     started together on a fresh folder; exactly one runs, the others exit 2
#     at once naming the holder's pid; readers work meanwhile; the winner is
#     SIGKILLed and two `tune resume` race at once: one finishes the sweep,
#     the other exits 2; nothing is lost and no SQLite error shows;
#  2. Ctrl-C under "isolation": "process" puts running trials back to PENDING
#     and the last line names `tune resume DIR`;
#  3. `tune resume DIR` from another folder runs a command trainer's relative
#     program from the folder the experiment started in, and says when that
#     folder is gone;
#  4. a -wal deleted under a running controller: `tune status` says so, and
#     the killed run's folder resumes (the experiment was checkpointed).
# Usage: test_controller.sh TUNE_BINARY
set -u
TUNE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/tune-controller-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

# 8 trials of 4 iterations of 0.1 s, two at a time: a sweep of about 1.6 s.
cat >"$tmp/c.json" <<'JSON'
{"name": "race", "metric": "val_accuracy", "num_samples": 8, "seed": 3,
 "max_concurrent_trials": 2,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-2]}},
 "trainer": {"type": "synthetic", "iterations": 4, "sleep_s": 0.1}}
JSON

# Waits until at most $1 of the pids in $2.. are alive (10 s at most).
wait_alive() {
    local want=$1; shift
    for _ in $(seq 200); do
        local n=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
        [ "$n" -le "$want" ] && return 0
        sleep 0.05
    done
    return 1
}

bad_errors='no such attempt|UNIQUE constraint|database is locked|SQLITE|disk I/O'
for round in $(seq 20); do
    d="$tmp/r$round"
    "$TUNE" run "$tmp/c.json" --storage "$d" --quiet >/dev/null 2>"$tmp/e1" &
    p1=$!
    "$TUNE" run "$tmp/c.json" --storage "$d" --quiet >/dev/null 2>"$tmp/e2" &
    p2=$!
    "$TUNE" resume "$d" --quiet >/dev/null 2>"$tmp/e3" &
    p3=$!
    if ! wait_alive 1 $p1 $p2 $p3; then
        fail "round $round: more than one controller still running after 10 s"
        kill -KILL $p1 $p2 $p3 2>/dev/null; wait; continue
    fi
    winner=
    for p in $p1 $p2 $p3; do kill -0 $p 2>/dev/null && winner=$p; done
    if [ -z "$winner" ]; then
        fail "round $round: no controller ran"; wait; continue
    fi
    # The winner may still be creating the experiment (a loaded machine): status
    # reads it as soon as it exists, while the run holds the folder (10 s at most).
    seen=0
    for _ in $(seq 200); do
        "$TUNE" status "$d" >/dev/null 2>&1 && { seen=1; break; }
        sleep 0.05
    done
    [ $seen = 1 ] || fail "round $round: status while the run holds the folder"
    i=0
    for p in $p1 $p2 $p3; do
        i=$((i + 1))
        [ $p = "$winner" ] && continue
        wait $p; rc=$?
        [ $rc = 2 ] || fail "round $round: a loser exited $rc, expected 2: $(cat "$tmp/e$i")"
        # The resume may come before the winner created the experiment.
        grep -qE "another tune run is using this experiment folder \(pid $winner on host .*tune resume|no experiment here" "$tmp/e$i" ||
            fail "round $round: loser's message: $(cat "$tmp/e$i")"
    done
    # A SIGKILLed controller leaves no lock behind: two resumes race at once.
    kill -KILL "$winner"; wait "$winner" 2>/dev/null
    "$TUNE" resume "$d" --quiet >/dev/null 2>"$tmp/f1" &
    q1=$!
    "$TUNE" resume "$d" --quiet >/dev/null 2>"$tmp/f2" &
    q2=$!
    wait $q1; r1=$?
    wait $q2; r2=$?
    if ! { [ $r1 = 0 ] && [ $r2 = 2 ]; } && ! { [ $r1 = 2 ] && [ $r2 = 0 ]; }; then
        fail "round $round: resumes exited $r1 and $r2, expected one 0 and one 2: $(cat "$tmp/f1" "$tmp/f2")"
    fi
    grep -qE "$bad_errors" "$tmp"/e[123] "$tmp"/f[12] && fail "round $round: store errors: $(cat "$tmp"/e[123] "$tmp"/f[12])"
    rows=$(grep -c ',TERMINATED,' "$d/results.csv" 2>/dev/null)
    [ "$rows" = 8 ] || fail "round $round: $rows of 8 trials TERMINATED after the resume"
done
[ "$fails" = 0 ] && ok "20 rounds: one controller each time, the folder resumable after SIGKILL"

# A second `tune run` into a finished folder is refused; `tune resume` is named.
"$TUNE" run "$tmp/c.json" --storage "$tmp/r1" --quiet >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && grep -qF "continue it with \`tune resume $tmp/r1\`" "$tmp/err" &&
    ok "run into a finished experiment refused" || fail "run into a finished experiment: exit $rc: $(cat "$tmp/err")"

# --- 2. Ctrl-C under process isolation: back to PENDING -------------------------
# Each iteration sleeps 30 s without reporting, so the stop escalation
# (SIGTERM, then SIGKILL) is what ends the trial processes.
cat >"$tmp/iso.json" <<'JSON'
{"name": "iso", "metric": "val_accuracy", "num_samples": 4, "seed": 1,
 "max_concurrent_trials": 2, "isolation": "process",
 "param_space": {"lr": {"loguniform": [1e-5, 1e-2]}},
 "trainer": {"type": "synthetic", "iterations": 3, "sleep_s": 30}}
JSON
"$TUNE" run "$tmp/iso.json" --storage "$tmp/iso" --quiet >/dev/null 2>"$tmp/err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
[ $rc = 1 ] && ok "interrupted run exits 1" || fail "interrupted run exited $rc"
"$TUNE" status "$tmp/iso" >"$tmp/status" 2>&1
grep -q "4 PENDING, 0 RUNNING, 0 TERMINATED, 0 STOPPED, 0 ERROR" "$tmp/status" &&
    ok "interrupted isolated trials are PENDING" || fail "after Ctrl-C: $(head -3 "$tmp/status")"
[ "$(tail -n 1 "$tmp/err")" = "tune: continue with \`tune resume $tmp/iso\`" ] &&
    ok "the last line names tune resume" || fail "last line after Ctrl-C: $(tail -n 1 "$tmp/err")"

# --- 3. resume from anywhere ------------------------------------------------------
mkdir -p "$tmp/proj"
cat >"$tmp/proj/train.sh" <<'SH'
#!/bin/sh
sleep 0.2
echo 'tune-report {"score": 1}'
SH
chmod +x "$tmp/proj/train.sh"
cat >"$tmp/proj/cmd.json" <<'JSON'
{"name": "cmd", "metric": "score", "num_samples": 12, "seed": 1, "max_concurrent_trials": 1,
 "param_space": {"x": {"uniform": [0, 1]}},
 "trainer": {"type": "command", "argv": ["./train.sh", "{x}"]}}
JSON
(cd "$tmp/proj" && exec "$TUNE" run cmd.json --storage exp --quiet >/dev/null 2>&1) &
pid=$!
sleep 1
kill -KILL $pid; wait $pid 2>/dev/null
(cd / && "$TUNE" resume "$tmp/proj/exp" >/dev/null 2>"$tmp/err")
rc=$?
[ $rc = 0 ] && ok "resume from / exits 0" || fail "resume from /: exit $rc: $(cat "$tmp/err")"
grep -qF "running trainers from $tmp/proj, where the experiment started" "$tmp/err" &&
    ok "resume names the folder it runs from" || fail "resume message: $(cat "$tmp/err")"
n=$(grep -c ',TERMINATED,' "$tmp/proj/exp/results.csv")
[ "$n" = 12 ] && ok "every trial ran from the stored folder" || fail "$n of 12 trials TERMINATED: $(cat "$tmp/err")"
# Relative to where it ran: resumed from inside the project folder too.
(cd "$tmp/proj/exp" && "$TUNE" resume . --quiet >/dev/null 2>"$tmp/err") &&
    ok "resume . from inside the experiment" || fail "resume .: $(cat "$tmp/err")"
mv "$tmp/proj" "$tmp/moved"
(cd / && "$TUNE" resume "$tmp/moved/exp" --quiet >/dev/null 2>"$tmp/err")
grep -qF "warning: $tmp/proj, the folder the experiment started in, cannot be entered (No such file or directory)" "$tmp/err" &&
    ok "a vanished start folder is named" || fail "vanished folder message: $(cat "$tmp/err")"

# --- 4. a -wal deleted under a running controller ---------------------------------
# The experiment itself is in experiment.db from creation: readers are told what
# happened, and after the controller is killed the folder resumes to the end.
cat >"$tmp/w.json" <<'JSON'
{"name": "wal", "metric": "val_accuracy", "num_samples": 50, "seed": 1,
 "max_concurrent_trials": 2,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-2]}},
 "trainer": {"type": "synthetic", "iterations": 3, "sleep_s": 0.05}}
JSON
"$TUNE" run "$tmp/w.json" --storage "$tmp/wal" --quiet >/dev/null 2>&1 &
pid=$!
# Deletes the -wal once the run is writing into it (on a loaded machine the
# controller may take a while to get there; 10 s at most).
for _ in $(seq 200); do
    [ -s "$tmp/wal/experiment.db-wal" ] && break
    sleep 0.05
done
[ -s "$tmp/wal/experiment.db-wal" ] || fail "the run wrote no experiment.db-wal within 10 s"
rm -f "$tmp/wal/experiment.db-wal"
"$TUNE" status "$tmp/wal" >"$tmp/out" 2>&1
grep -q "experiment.db-wal was deleted while a run was writing" "$tmp/out" &&
    ok "status explains a deleted -wal" || fail "status after a deleted -wal: $(head -c 300 "$tmp/out")"
kill -KILL $pid; wait $pid 2>/dev/null
"$TUNE" resume "$tmp/wal" --quiet >/dev/null 2>"$tmp/err" &&
    [ "$(grep -c ',TERMINATED,' "$tmp/wal/results.csv")" = 50 ] &&
    ok "a folder that lost its -wal resumes to the end" || fail "resume after a lost -wal: $(cat "$tmp/err")"

[ "$fails" = 0 ] && echo "all ok"
[ "$fails" = 0 ]
