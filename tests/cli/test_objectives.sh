#!/usr/bin/env bash
# Objectives that try to wedge `tune run` (plugins from tests/plugin_fixture.c):
#  (a) one that hangs in pause(): a second SIGINT, or a second SIGTERM, ends the
#      run at once, with the running trials back to PENDING in the store;
#  (b) one that calls exit(0) in thread mode: the run ends with status 1, names
#      the trial, and leaves no trial RUNNING;
#  (c) under "isolation": "process", one that reports every 10 ms: still killed
#      at trial_timeout_s; and its process dies with a SIGKILLed controller.
# Usage: test_objectives.sh TUNE_BINARY BUILD_ROOT
set -u
TUNE=$1
lib="$2/tests/libtune_test_plugin.so"
tmp=$(mktemp -d /tmp/tune-objectives-XXXXXX)
pid=""
trap 'kill -KILL $pid 2>/dev/null; rm -rf "$tmp"' EXIT
command -v sqlite3 >/dev/null || { echo "sqlite3 is missing: skipped"; exit 77; }
fails=0
ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

config() { # name symbol isolation num_samples max_concurrent_trials [more members]
    cat <<JSON
{"name": "$1", "metric": "val_accuracy", "num_samples": $4, "seed": 1,
 "max_concurrent_trials": $5, "isolation": "$3", "max_failures": 0 ${6:-},
 "param_space": {"x": {"uniform": [0, 1]}},
 "trainer": {"type": "plugin", "library": "$lib", "symbol": "$2"}}
JSON
}

# Waits up to $2 seconds for process $1 to end; its exit status in $rc, or 124 when it did not.
wait_for() {
    local i
    for ((i = 0; i < $2 * 20; i++)); do
        kill -0 "$1" 2>/dev/null || { wait "$1"; rc=$?; return; }
        sleep 0.05
    done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    rc=124
}

# Waits up to 10 s until the store shows n RUNNING trials.
wait_running() { # db n
    local i
    for ((i = 0; i < 200; i++)); do
        [ "$(sqlite3 "$1" "SELECT count(*) FROM trials WHERE status = 'RUNNING'" 2>/dev/null)" = "$2" ] && return 0
        sleep 0.05
    done
    return 1
}

# ---- (a) a hung objective, twice interrupted --------------------------------------
for sig in INT TERM; do
    config hang fixture_hang thread 4 2 >"$tmp/hang.json"
    exp="$tmp/hang-$sig"
    "$TUNE" run "$tmp/hang.json" --storage "$exp" --quiet >/dev/null 2>"$tmp/err" &
    pid=$!
    wait_running "$exp/experiment.db" 2 || fail "$sig: the hung trials never showed as RUNNING"
    kill -"$sig" $pid
    sleep 0.3
    kill -"$sig" $pid
    wait_for $pid 10
    [ "$rc" = 1 ] && ok "$sig twice: the run ended at once (exit 1)" ||
        fail "$sig twice: exit status $rc (124: still running after 10 s): $(cat "$tmp/err")"
    grep -q "stopped at once" "$tmp/err" && ok "$sig twice: says so" ||
        fail "$sig twice: stderr: $(cat "$tmp/err")"
    running=$(sqlite3 "$exp/experiment.db" "SELECT count(*) FROM trials WHERE status = 'RUNNING'")
    pending=$(sqlite3 "$exp/experiment.db" "SELECT count(*) FROM trials WHERE status = 'PENDING'")
    [ "$running" = 0 ] && [ "$pending" = 2 ] && ok "$sig twice: both running trials are PENDING" ||
        fail "$sig twice: $running RUNNING and $pending PENDING trials in the store"
done

# ---- (b) exit() in an objective ------------------------------------------------------
config exit fixture_exit thread 6 1 >"$tmp/exit.json"
timeout -k 5 30 "$TUNE" run "$tmp/exit.json" --storage "$tmp/exit" --quiet >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && ok "exit(0) in an objective: exit status 1" || fail "exit(0) in an objective: exit status $rc"
grep -q "trial 1: the objective called exit()" "$tmp/err" && ok "names trial 1" ||
    fail "stderr does not name trial 1: $(cat "$tmp/err")"
states=$(sqlite3 "$tmp/exit/experiment.db" "SELECT group_concat(trial_id || ':' || status, ' ') FROM trials")
[ "$states" = "0:TERMINATED 1:PENDING" ] && ok "store: $states" || fail "store: $states"

# ---- (c) process isolation: a child reporting without pause ---------------------------
config spin fixture_spin process 1 1 ', "trial_timeout_s": 1' >"$tmp/spin.json"
timeout -k 5 30 "$TUNE" run "$tmp/spin.json" --storage "$tmp/spin" --quiet >/dev/null 2>"$tmp/err"
rc=$?
err=$(sqlite3 "$tmp/spin/experiment.db" "SELECT status || ' ' || error FROM trials")
case "$err" in
    "ERROR timed out after 1 s"*) ok "a child that reports every 10 ms still times out" ;;
    *) fail "spinning child: exit $rc, trial: $err" ;;
esac

config orphan fixture_spin process 1 1 >"$tmp/orphan.json"
"$TUNE" run "$tmp/orphan.json" --storage "$tmp/orphan" --quiet >/dev/null 2>"$tmp/err" &
pid=$!
wait_running "$tmp/orphan/experiment.db" 1 || fail "the spinning trial never showed as RUNNING"
children=$(pgrep -P $pid)
[ -n "$children" ] || fail "no trial process under the controller"
kill -KILL $pid
wait $pid 2>/dev/null
sleep 0.5
alive=""
for c in $children; do
    # A zombie waiting for its new parent to reap it has ended.
    state=$(awk '{print $3}' "/proc/$c/stat" 2>/dev/null)
    [ -n "$state" ] && [ "$state" != Z ] && alive="$alive $c"
done
[ -z "$alive" ] && ok "the trial process died with its controller" || {
    fail "trial processes outlived a SIGKILLed controller:$alive"
    kill -KILL $alive 2>/dev/null
}

[ "$fails" = 0 ] && echo "ok: objectives cannot wedge tune"
[ "$fails" = 0 ]
