#!/usr/bin/env bash
# End to end: `tune run` with external-command and plugin objectives.
#  (a) an ASHA sweep of a shell script that reports lines: every report is in
#      progress.csv with the value the script computed from its arguments,
#      stopped trials' processes are gone, every trial folder has params.json,
#      the arguments as substituted (a value with a space, a nested name) and
#      the script's other output in stdout.log;
#  (b) a script that ignores SIGTERM is SIGKILLed after kill_grace_s, and one
#      whose tune is SIGKILLed dies with it;
#  (c) a failing script is retried and its error shown by `tune status`;
#  (d) plugins: a missing library or symbol is the exact error with exit 2 and
#      nothing written (run and validate); the example plugin sweeps, with its
#      init and fini;
#  (e) the PyTorch example, shortened, when /usr/bin/python3 has torch.
# Usage: test_command.sh TUNE_BINARY SOURCE_ROOT BUILD_ROOT
set -u
TUNE=$1
SRC=$2
BUILD=$3
tmp=$(mktemp -d /tmp/tune-command-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

expect_rc() { # expected_rc description cmd...: output in $tmp/out, $tmp/err
    local want=$1 what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$what: exit $rc, expected $want; stderr: $(head -c 600 "$tmp/err")"
        return 1
    fi
    ok "$what"
}
alive() { # pid: running and not a zombie
    [ -r "/proc/$1/stat" ] && ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$1/stat"
}
gone() { # pid: gone within a second (a reparented child may wait for its reaper)
    for _ in 1 2 3 4 5 6 7 8 9 10; do alive "$1" || return 0; sleep 0.1; done
    return 1
}

# ---- (a) an ASHA sweep of a script -------------------------------------------
# score = epoch / 9 * (1 - |log10(lr) + 2| / 4): every trial's curve is known.
cat >"$tmp/train.sh" <<'SH'
#!/bin/sh
echo $$ > "$TUNE_TRIAL_DIR/pid"
printf '%s\n' "$@" > "$TUNE_TRIAL_DIR/args.txt"
lr=$2
epoch=1
while [ $epoch -le 9 ]; do
    echo "epoch $epoch"
    awk -v lr="$lr" -v e="$epoch" 'BEGIN {
        d = log(lr) / log(10) + 2; if (d < 0) d = -d
        printf "tune-report {\"score\": %.12f, \"epoch\": %d}\n", e / 9 * (1 - d / 4), e }'
    sleep 0.05
    epoch=$((epoch + 1))
done
SH
chmod +x "$tmp/train.sh"
cat >"$tmp/asha.json" <<JSON
{"name": "asha-cmd", "metric": "score", "mode": "max", "num_samples": 12, "seed": 5,
 "max_concurrent_trials": 3,
 "param_space": {"lr": {"loguniform": [1e-4, 1.0]},
                 "opt": {"name": {"choice": ["adam w", "sgd"]}}},
 "scheduler": {"type": "asha", "max_t": 9, "grace_period": 1, "reduction_factor": 3},
 "trainer": {"type": "command",
             "argv": ["$tmp/train.sh", "--lr", "{lr}", "--opt", "{opt/name}", "--id={trial_id}"]}}
JSON
exp="$tmp/asha"
expect_rc 0 "ASHA sweep of a script" "$TUNE" run "$tmp/asha.json" --storage "$exp" --quiet
res="$exp/results.csv"
prog="$exp/progress.csv"
[ "$(head -1 "$res" | tr -d '\r')" = \
  "trial_id,status,training_iteration,config/lr,config/opt/name,score,epoch,time_total_s,attempts,error,time_this_iter_s,time_since_restore,iterations_since_restore,timestamp,date,done,pid,hostname,node_ip,logdir" ] &&
    ok "results.csv header" || fail "results.csv header: $(head -1 "$res")"
[ "$(tail -n +2 "$res" | wc -l)" = 12 ] && ok "12 trials" || fail "trials: $(tail -n +2 "$res" | wc -l)"

# Every report, row by row: iterations 1..n without a gap, the score the script
# computed for the trial's lr, epoch = iteration; ASHA ends a trial at a rung
# (1 or 3) as STOPPED or at max_t 9 as TERMINATED.
tr -d '\r' <"$res" | tail -n +2 | sort -t, -k1,1n >"$tmp/res"
tr -d '\r' <"$prog" | tail -n +2 >"$tmp/prog"
bad=$(awk -F, '
    NR == FNR { lr[$1] = $4; status[$1] = $2; iters[$1] = $3; next }
    {
        t = $1; it = $2
        if (it != ++seen[t]) { print "trial " t ": iteration " it " after " seen[t] - 1; next }
        d = log(lr[t]) / log(10) + 2; if (d < 0) d = -d
        want = it / 9 * (1 - d / 4)
        if ($4 - want > 1e-9 || want - $4 > 1e-9) print "trial " t " iteration " it ": score " $4 ", want " want
        if ($5 != it) print "trial " t " iteration " it ": epoch " $5
    }
    END {
        for (t in status) {
            if (seen[t] != iters[t]) print "trial " t ": " seen[t] " reports, results say " iters[t]
            if (status[t] == "TERMINATED" && iters[t] != 9) print "trial " t ": TERMINATED at " iters[t]
            if (status[t] == "STOPPED" && iters[t] != 1 && iters[t] != 3) print "trial " t ": STOPPED at " iters[t]
            if (status[t] != "TERMINATED" && status[t] != "STOPPED") print "trial " t ": " status[t]
        }
    }' "$tmp/res" "$tmp/prog")
[ -z "$bad" ] && ok "every report stored as the script computed it" || fail "reports: $bad"
stopped=$(awk -F, '$2 == "STOPPED"' "$tmp/res" | wc -l)
[ "$stopped" -ge 4 ] && ok "$stopped trials stopped by ASHA" || fail "only $stopped trials stopped"

# The folders: params.json, the substituted arguments, stdout.log, and no process left.
while IFS=, read -r id status iters lr name _; do
    dir=$(printf '%s/trials/trial_%06d' "$exp" "$id")
    want=$(printf '{"lr":%s,"opt":{"name":"%s"}}' "$lr" "$name")
    [ "$(cat "$dir/params.json")" = "$want" ] || fail "trial $id params.json: $(cat "$dir/params.json"), want $want"
    printf -- '--lr\n%s\n--opt\n%s\n--id=%s\n' "$lr" "$name" "$id" >"$tmp/args.want"
    cmp -s "$dir/args.txt" "$tmp/args.want" || fail "trial $id arguments: $(cat "$dir/args.txt")"
    want_log=$(seq 1 "$iters" | sed 's/^/epoch /')
    [ "$(cat "$dir/stdout.log")" = "$want_log" ] || fail "trial $id stdout.log: $(head -c 200 "$dir/stdout.log")"
    pid=$(cat "$dir/pid")
    gone "$pid" || fail "trial $id ($status): its process $pid is still running"
    if [ "$status" = STOPPED ]; then
        grep -q '^\[tune\] attempt 1: stopped (SIGTERM)$' "$dir/stderr.log" ||
            fail "trial $id stderr.log: $(cat "$dir/stderr.log")"
    fi
done <"$tmp/res"
[ "$fails" = 0 ] && ok "trial folders: params.json, arguments, stdout.log; stopped processes gone"
grep -q ',adam w,' "$tmp/res" && ok "a value with a space stays one argument" ||
    fail "no trial drew 'adam w'"

# ---- (b) SIGTERM ignored: SIGKILL after the grace period ---------------------
cat >"$tmp/stubborn.sh" <<'SH'
#!/bin/sh
trap '' TERM
echo $$ > "$TUNE_TRIAL_DIR/pid"
while :; do echo 'tune-report {"score": 1}'; sleep 0.05; done
SH
chmod +x "$tmp/stubborn.sh"
cat >"$tmp/stubborn.json" <<JSON
{"name": "stubborn", "metric": "score", "num_samples": 1, "stop": {"training_iteration": 2},
 "trainer": {"type": "command", "argv": ["$tmp/stubborn.sh"], "kill_grace_s": 1}}
JSON
start=$(date +%s.%N)
expect_rc 0 "SIGTERM-ignoring script" "$TUNE" run "$tmp/stubborn.json" --storage "$tmp/stubborn" --quiet
took=$(echo "$(date +%s.%N) - $start" | bc)
dir="$tmp/stubborn/trials/trial_000000"
if [ "$(echo "$took >= 1 && $took < 6" | bc)" = 1 ]; then ok "stopped after the 1 s grace ($took s)"
else fail "took $took s with kill_grace_s 1"; fi
gone "$(cat "$dir/pid")" && ok "SIGKILLed" || fail "the stubborn script is still running"
grep -q '^\[tune\] attempt 1: stopped (SIGTERM, then SIGKILL after kill_grace_s)$' "$dir/stderr.log" &&
    ok "stderr.log says SIGKILL" || fail "stderr.log: $(cat "$dir/stderr.log")"

# ---- (b2) tune itself killed: the program goes with it -----------------------
cat >"$tmp/long.sh" <<'SH'
#!/bin/sh
echo 'tune-report {"score": 1}'
echo $$ > "$TUNE_TRIAL_DIR/pid"
exec sleep 60
SH
chmod +x "$tmp/long.sh"
cat >"$tmp/long.json" <<JSON
{"name": "long", "metric": "score", "num_samples": 1,
 "trainer": {"type": "command", "argv": ["$tmp/long.sh"]}}
JSON
"$TUNE" run "$tmp/long.json" --storage "$tmp/long" --quiet >/dev/null 2>&1 &
tune_pid=$!
pidfile="$tmp/long/trials/trial_000000/pid"
for _ in $(seq 100); do [ -s "$pidfile" ] && break; sleep 0.05; done
if [ -s "$pidfile" ]; then
    kill -9 "$tune_pid"; wait "$tune_pid" 2>/dev/null
    gone "$(cat "$pidfile")" && ok "SIGKILL of tune kills its trial's program" ||
        fail "the program outlived tune"
else
    kill -9 "$tune_pid"; fail "the long-running program never started"
fi

# ---- (c) failures: retried, and the reason shown -----------------------------
cat >"$tmp/flaky.sh" <<'SH'
#!/bin/sh
echo 'tune-report {"score": 1}'
if [ "$1" = fail ] || [ "$TUNE_TRIAL_ATTEMPT" = 1 ]; then
    echo "Traceback: ValueError: bad lr (attempt $TUNE_TRIAL_ATTEMPT)" >&2
    exit 3
fi
SH
chmod +x "$tmp/flaky.sh"
cat >"$tmp/flaky.json" <<JSON
{"name": "flaky", "metric": "score", "max_failures": 1,
 "param_space": {"mode": {"grid_search": ["ok", "fail"]}},
 "trainer": {"type": "command", "argv": ["$tmp/flaky.sh", "{mode}"]}}
JSON
expect_rc 1 "a trial that always fails" "$TUNE" run "$tmp/flaky.json" --storage "$tmp/flaky" --quiet
grep -q "1 trial(s) ended in ERROR" "$tmp/err" && ok "run says so" || fail "stderr: $(cat "$tmp/err")"
expect_rc 0 "status of the flaky sweep" "$TUNE" status "$tmp/flaky"
grep -qx 'ERROR trial 1 (attempt 2): command exited with status 3 (stderr: Traceback: ValueError: bad lr (attempt 2))' \
    "$tmp/out" && ok "status shows the error" || fail "status: $(cat "$tmp/out")"
[ "$(grep -c '^TERMINATED\|^0,TERMINATED' "$tmp/flaky/results.csv")" = 1 ] &&
    ok "the flaky trial succeeded on its retry" || fail "results: $(cat "$tmp/flaky/results.csv")"
[ "$(grep -c '^\[tune\] attempt [12]: /' "$tmp/flaky/trials/trial_000000/stderr.log")" = 2 ] &&
    ok "both attempts in stderr.log" || fail "stderr.log: $(cat "$tmp/flaky/trials/trial_000000/stderr.log")"

# ---- (d) plugins ---------------------------------------------------------------
lib="$BUILD/examples/plugin/libobjective.so"
[ -f "$lib" ] || fail "the example plugin was not built at $lib"
plugin_config() { # library symbol
    cat <<JSON
{"name": "plugin", "metric": "val_accuracy", "num_samples": 30, "seed": 7,
 "storage": "$tmp/plugin-exp",
 "param_space": {"lr": {"loguniform": [1e-5, 1e-1]}, "momentum": {"uniform": [0.5, 0.99]}},
 "scheduler": {"type": "asha", "max_t": 20, "grace_period": 2, "reduction_factor": 3},
 "trainer": {"type": "plugin", "library": "$1", "symbol": "$2",
             "init_symbol": "objective_init", "fini_symbol": "objective_fini",
             "data": {"target_lr": 0.003, "iterations": 20, "summary": "$tmp/summary.txt"}}}
JSON
}
plugin_config "$tmp/no/libnope.so" objective >"$tmp/nolib.json"
plugin_config "$lib" objectiv >"$tmp/nosym.json"
# Line 5, the trainer's: the library's value starts at column 43, the symbol's 14 bytes after it.
want_nolib="tune: $tmp/nolib.json:5:43: trainer.library: cannot load '$tmp/no/libnope.so': cannot open shared object file: No such file or directory"
want_nosym="tune: $tmp/nosym.json:5:$((57 + ${#lib})): trainer.symbol: 'objectiv' is not in '$lib' (undefined symbol: objectiv)"
for c in validate run; do
    expect_rc 2 "$c: missing plugin library" "$TUNE" "$c" "$tmp/nolib.json"
    [ "$(cat "$tmp/err")" = "$want_nolib" ] && ok "$c: library error" ||
        fail "$c: stderr is"$'\n'"$(cat "$tmp/err")"$'\n'"expected"$'\n'"$want_nolib"
    expect_rc 2 "$c: missing plugin symbol" "$TUNE" "$c" "$tmp/nosym.json"
    [ "$(cat "$tmp/err")" = "$want_nosym" ] && ok "$c: symbol error" ||
        fail "$c: stderr is"$'\n'"$(cat "$tmp/err")"$'\n'"expected"$'\n'"$want_nosym"
done
[ ! -e "$tmp/plugin-exp" ] && ok "nothing written" || fail "a failed plugin config wrote $tmp/plugin-exp"

plugin_config "$lib" objective >"$tmp/plugin.json"
expect_rc 0 "plugin sweep" "$TUNE" run "$tmp/plugin.json" --quiet
[ "$(cat "$tmp/summary.txt" 2>/dev/null)" = "trials 30" ] && ok "init and fini ran (30 trials)" ||
    fail "summary: $(cat "$tmp/summary.txt" 2>/dev/null)"
"$TUNE" best "$tmp/plugin-exp" >"$tmp/best" 2>&1
best=$(sed -n 's/.*"val_accuracy":\([0-9.]*\).*/\1/p' "$tmp/best")
[ -n "$best" ] && [ "$(echo "$best > 0.9" | bc)" = 1 ] && ok "plugin best $best" ||
    fail "plugin best: $(cat "$tmp/best")"
# The example objective never asks for its folder (tune_trial_dir), so it has none.
[ ! -e "$tmp/plugin-exp/trials" ] && ok "no trial folders for an objective that needs none" ||
    fail "trial folders: $(ls "$tmp/plugin-exp/trials" | head -3)"

# ---- (e) the PyTorch example ---------------------------------------------------
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    # Shortened: 3 trials of 3 epochs, Debian's python3 first on PATH.
    sed -e 's/"num_samples": 12/"num_samples": 3/' -e 's/"max_t": 20/"max_t": 3/' \
        -e 's/"grace_period": 2/"grace_period": 1/' -e 's/"20"\]/"3"]/' \
        "$SRC/configs/examples/command_asha.json" >"$tmp/torch.json"
    (cd "$SRC" && PATH=/usr/bin:$PATH expect_rc 0 "PyTorch example (3 trials)" \
        "$TUNE" run "$tmp/torch.json" --storage "$tmp/torch" --quiet) || fails=$((fails + 1))
    n=$(tail -n +2 "$tmp/torch/progress.csv" | wc -l)
    acc_ok=$(awk -F, 'NR > 1 && $4 > 0.2 && $4 <= 1 { n++ } END { print n + 0 }' "$tmp/torch/progress.csv")
    [ "$n" -ge 3 ] && [ "$acc_ok" = "$n" ] && ok "PyTorch example: $n reports with val_accuracy" ||
        fail "PyTorch example progress: $(head -5 "$tmp/torch/progress.csv")"
else
    echo "skip: PyTorch example (no torch for /usr/bin/python3)"
fi

echo "$fails failure(s)"
[ "$fails" = 0 ]
