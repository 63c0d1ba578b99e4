#!/usr/bin/env bash
# End to end: GPU placement of command-trainer trials on GPUs declared with
# --gpus (this machine needs none).
#  (a) {"gpu": 0.5} on --gpus 0,1 with room for eight at once: each program
#      sees one GPU in CUDA_VISIBLE_DEVICES, at most two run on a device at
#      any moment and four at once (and four do run at once);
#  (b) {"gpu": 1} on two GPUs: two at once, never the same device;
#  (c) {"gpu": 2}: each program sees both GPUs; "cpu": 3 sets OMP_NUM_THREADS,
#      MKL_NUM_THREADS and OPENBLAS_NUM_THREADS;
#  (d) validate: a GPU request without GPUs (none found, none given), a
#      resource the trainer would ignore, more whole GPUs than there are, a
#      share below the smallest, and the config's "gpus" and --gpus declaring them.
# Usage: test_placement.sh TUNE_BINARY SOURCE_ROOT BUILD_ROOT
set -u
TUNE=$1
tmp=$(mktemp -d /tmp/tune-placement-XXXXXX)
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
# No GPU of this machine (or the driver's listing) may leak into the tests.
unset CUDA_VISIBLE_DEVICES

# The program records its devices, its thread variables and when it ran.
cat >"$tmp/train.sh" <<'SH'
#!/bin/sh
start=$(date +%s.%N)
sleep 0.4
end=$(date +%s.%N)
echo "$TUNE_TRIAL_ID ${CUDA_VISIBLE_DEVICES-unset} $start $end" >> "$LOG"
echo "${OMP_NUM_THREADS-unset} ${MKL_NUM_THREADS-unset} ${OPENBLAS_NUM_THREADS-unset}" > "$TUNE_TRIAL_DIR/threads"
echo 'tune-report {"score": 1}'
SH
chmod +x "$tmp/train.sh"

config() { # name resources extra-top-level-keys
    cat >"$tmp/$1.json" <<JSON
{"name": "$1", "metric": "score", "num_samples": 12, "max_concurrent_trials": 8,
 "param_space": {"x": {"type": "uniform", "low": 0, "high": 1}},
 "resources_per_trial": $2, $3
 "trainer": {"type": "command", "argv": ["$tmp/train.sh"], "env": {"LOG": "$tmp/$1.log"}}}
JSON
}

# Most intervals of a log open at any moment, overall and per device (column 2).
overlap() { # log [device]
    awk -v dev="${2-}" '
        dev == "" || $2 == dev { t[n] = $3; k[n++] = 1; t[n] = $4; k[n++] = -1 }
        END {
            # sort the events by time, ends before starts at equal times
            for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
                if (t[j] < t[i] || (t[j] == t[i] && k[j] < k[i])) {
                    x = t[i]; t[i] = t[j]; t[j] = x; x = k[i]; k[i] = k[j]; k[j] = x }
            c = 0; m = 0
            for (i = 0; i < n; i++) { c += k[i]; if (c > m) m = c }
            print m
        }' "$1"
}

# ---- (a) half a GPU each on two GPUs ------------------------------------------
config half '{"gpu": 0.5}' ''
expect_rc 0 "gpu 0.5 on --gpus 0,1" "$TUNE" run "$tmp/half.json" --gpus 0,1 --storage "$tmp/half" --quiet
log="$tmp/half.log"
[ "$(wc -l <"$log")" -eq 12 ] && ok "12 trials ran" || fail "$(wc -l <"$log") trials ran"
bad=$(awk '$2 != "0" && $2 != "1"' "$log")
[ -s "$log" ] && [ -z "$bad" ] && ok "each program sees one of GPUs 0 and 1" || fail "devices: $bad"
all=$(overlap "$log"); d0=$(overlap "$log" 0); d1=$(overlap "$log" 1)
[ "$all" -eq 4 ] && ok "four at once" || fail "$all at once, expected 4"
[ "$d0" -le 2 ] && [ "$d1" -le 2 ] && ok "at most two per GPU ($d0, $d1)" ||
    fail "$d0 on GPU 0 and $d1 on GPU 1 at once"
# The store records each trial's device: the GPU its program saw.
stored_devices() { # storage -> "id device" lines
    sqlite3 "$1/experiment.db" "SELECT trial_id, device FROM trials ORDER BY trial_id" | tr '|' ' '
}
want=$(awk '{ print $1, "cuda:" $2 }' "$log" | sort -n)
got=$(stored_devices "$tmp/half" | sort -n)
[ -n "$got" ] && [ "$got" = "$want" ] && ok "the store's device column matches each program's GPU" ||
    fail "stored devices: $got; the programs saw: $want"

# ---- (b) a whole GPU each ------------------------------------------------------
config whole '{"gpu": 1}' ''
expect_rc 0 "gpu 1 on --gpus 2" "$TUNE" run "$tmp/whole.json" --gpus 2 --storage "$tmp/whole" --quiet
log="$tmp/whole.log"
all=$(overlap "$log"); d0=$(overlap "$log" 0); d1=$(overlap "$log" 1)
[ "$all" -eq 2 ] && [ "$d0" -eq 1 ] && [ "$d1" -eq 1 ] && ok "two at once, one per GPU" ||
    fail "$all at once ($d0 on GPU 0, $d1 on GPU 1)"

# ---- (c) two GPUs per trial, and the thread variables --------------------------
config two '{"gpu": 2, "cpu": 3}' '"gpus": [3, 5],'
expect_rc 0 "gpu 2 on the config's gpus [3, 5]" "$TUNE" run "$tmp/two.json" --storage "$tmp/two" --quiet
log="$tmp/two.log"
bad=$(awk '$2 != "3,5"' "$log")
[ -s "$log" ] && [ -z "$bad" ] && ok "each program sees CUDA_VISIBLE_DEVICES=3,5" || fail "devices: $bad"
got=$(stored_devices "$tmp/two" | awk '{ print $2 }' | sort -u)
[ "$got" = "cuda:3,5" ] && ok "the store records both GPUs" || fail "stored devices: $got"
[ "$(overlap "$log")" -eq 1 ] && ok "one at once" || fail "$(overlap "$log") at once"
[ "$(cat "$tmp/two/trials/trial_000000/threads")" = "3 3 3" ] &&
    ok "cpu 3: OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS" ||
    fail "thread variables: $(cat "$tmp/two/trials/trial_000000/threads")"
# (tune's own OPENBLAS_NUM_THREADS=1, see tune_cpu_env_advice(), passes on as before)
[ "$(cut -d' ' -f1,2 "$tmp/half/trials/trial_000000/threads")" = "unset unset" ] &&
    ok "no cpu: no OMP_NUM_THREADS or MKL_NUM_THREADS" ||
    fail "thread variables without cpu: $(cat "$tmp/half/trials/trial_000000/threads")"

# ---- (d) validate -------------------------------------------------------------
if [ ! -d /proc/driver/nvidia/gpus ]; then
    expect_rc 2 "a GPU request without GPUs" "$TUNE" validate "$tmp/half.json" &&
        grep -q 'resources_per_trial.gpu: trials ask for a GPU, but no NVIDIA driver' "$tmp/err" &&
        ok "  names the reason" || fail "message: $(cat "$tmp/err")"
fi
expect_rc 0 "validate --gpus 1" "$TUNE" validate "$tmp/half.json" --gpus 1
expect_rc 2 "validate --gpus 0" "$TUNE" validate "$tmp/half.json" --gpus 0
expect_rc 2 "two GPUs a trial, one given" "$TUNE" validate "$tmp/two.json" --gpus 1 &&
    grep -q 'a trial takes 2 GPUs, but 1 is there' "$tmp/err" && ok "  says so" ||
    fail "message: $(cat "$tmp/err")"
config tiny '{"gpu": 0.00001}' ''
expect_rc 2 "a share below 1/10000" "$TUNE" validate "$tmp/tiny.json" --gpus 1 &&
    grep -q 'resources_per_trial.gpu: 1e-05 is below the smallest share, 0.0001' "$tmp/err" &&
    ok "  says so" || fail "message: $(cat "$tmp/err")"
expect_rc 2 "bad --gpus" "$TUNE" validate "$tmp/half.json" --gpus 0,x
cat >"$tmp/synthetic.json" <<'JSON'
{"param_space": {"x": {"type": "uniform", "low": 0, "high": 1}},
 "resources_per_trial": {"gpu": 0.5}, "trainer": {"type": "synthetic"}}
JSON
expect_rc 2 "gpu for the synthetic trainer" "$TUNE" validate "$tmp/synthetic.json" --gpus 2 &&
    grep -q 'resources_per_trial.gpu: the synthetic trainer does not use a GPU per trial' "$tmp/err" &&
    ok "  says so" || fail "message: $(cat "$tmp/err")"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all placement tests passed"
