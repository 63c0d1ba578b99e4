#!/usr/bin/env bash
# The store on a failing file system, end to end:
#  (a) a finished experiment on a read-only file system: every command that
#      writes fails with exit 1 and one message, nothing changes, and status,
#      best and export still read it;
#  (b) a disk that fills up during a sweep, and one that is nearly full from
#      the start: exit 1 with one line naming the store and the full disk, the
#      database passes PRAGMA integrity_check, status reads it, and once space
#      is freed `tune resume` finishes the sweep.
# Permission bits do not stop root, so the faults are real mounts: small tmpfs
# file systems (remounted read-only for (a)) inside a private mount namespace,
# which the kernel tears down with the last process even if the test dies.
# Without root, unshare or tmpfs (unprivileged containers) it is skipped (77).
# Usage: test_store_faults.sh TUNE_BINARY
set -u
TUNE=$1
[ -x "$TUNE" ] || { echo "FAIL: no tune binary at '$TUNE'"; exit 1; }
command -v sqlite3 >/dev/null || { echo "skip: sqlite3 is missing"; exit 77; }
if [ -z "${TUNE_FAULTS_NS:-}" ]; then
    [ "$(id -u)" = 0 ] || { echo "skip: mounting a tmpfs needs root"; exit 77; }
    unshare --mount --propagation private true 2>/dev/null ||
        { echo "skip: unshare --mount is not permitted here"; exit 77; }
    TUNE_FAULTS_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
tmp=$(mktemp -d /tmp/tune-faults-XXXXXX)
trap 'umount "$tmp/ro" "$tmp/full" "$tmp/tiny" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$tmp/ro" "$tmp/full" "$tmp/tiny"
mount -t tmpfs -o size=16m tmpfs "$tmp/ro" 2>/dev/null ||
    { echo "skip: cannot mount a tmpfs here"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

run() { # what tune-args...: runs tune; rc in $rc, output in $tmp/out and $tmp/err
    local what=$1; shift
    "$TUNE" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    last="$what"
}
expect_rc() { # expected_rc; returns 1 when it differs
    if [ "$rc" -eq "$1" ]; then
        ok "$last: exit $rc"
    else
        fail "$last: exit $rc, expected $1; stderr: $(head -c 400 "$tmp/err")"
        return 1
    fi
}
expect_err() { # exact stderr, one line
    local got
    got=$(cat "$tmp/err")
    [ "$got" = "$1" ] && ok "$last: message" ||
        fail "$last: stderr is"$'\n'"$got"$'\n'"expected"$'\n'"$1"
}

# quickstart.json's sweep (ASHA over the synthetic objective), with $1 trials.
config() {
    cat <<JSON
{"name": "faults", "metric": "val_accuracy", "mode": "max", "num_samples": $1, "seed": 42,
 "max_concurrent_trials": 2,
 "param_space": {"lr": {"loguniform": [1e-6, 1e-1]}, "batch_size": {"choice": [16, 32, 64]},
                 "warmup_steps": {"randint": [0, 11]}, "weight_decay": {"uniform": [0.0, 0.3]}},
 "scheduler": {"type": "asha", "max_t": 27, "grace_period": 1, "reduction_factor": 3},
 "trainer": {"type": "synthetic", "iterations": 27}}
JSON
}
config 20 >"$tmp/small.json"
config 300 >"$tmp/big.json"
finished() { # db: trials that ended
    sqlite3 "$1" "SELECT count(*) FROM trials WHERE status IN ('TERMINATED', 'STOPPED')"
}

# ---- (a) a read-only experiment ----------------------------------------------
# Made read-only right after its run, as an archived sweep: the WAL files are
# gone (the writer removes them on close), and SQLite cannot create them.
exp="$tmp/ro/exp"
run "run small" run "$tmp/small.json" --storage "$exp" --quiet
expect_rc 0
# What status and best show, taken from a writable copy (a reader would leave
# experiment.db-wal and -shm behind in $exp itself).
cp -a "$exp" "$tmp/copy"
"$TUNE" status "$tmp/copy" 2>&1 | sed "s|$tmp/copy|$exp|g" >"$tmp/status.want"
"$TUNE" best "$tmp/copy" >"$tmp/best.want" 2>&1
(cd "$exp" && ls -A && sha256sum -- *) >"$tmp/files.want"
mount -o remount,ro "$tmp/ro" || { echo "skip: cannot remount the tmpfs read-only"; exit 77; }
if touch "$tmp/ro/probe" 2>/dev/null; then
    fail "the remounted tmpfs is still writable"
fi

# Writing commands fail at the store, before any trial runs.
run "resume on a read-only file system" resume "$exp" --quiet
expect_rc 1
expect_err "tune: $exp/experiment.db: store: the experiment cannot be written: Read-only file\
 system"
run "run into a read-only experiment" run "$tmp/small.json" --storage "$exp" --quiet
expect_rc 1
expect_err "tune: $exp/experiment.db: store: the experiment cannot be written: Read-only file\
 system"
run "run into a new folder on a read-only file system" run "$tmp/small.json" \
    --storage "$tmp/ro/new" --quiet
expect_rc 1
expect_err "tune: $tmp/ro/new: cannot create folder: Read-only file system"
(cd "$exp" && ls -A && sha256sum -- *) >"$tmp/files.got"
cmp -s "$tmp/files.want" "$tmp/files.got" && ok "read-only experiment unchanged" ||
    fail "files changed: $(diff "$tmp/files.want" "$tmp/files.got" | head -5)"

# Reading commands work as before.
run "status of a read-only experiment" status "$exp"
expect_rc 0 && { cmp -s "$tmp/out" "$tmp/status.want" && ok "status output as before" ||
    fail "status output: $(head -c 300 "$tmp/out")"; }
run "best of a read-only experiment" best "$exp"
expect_rc 0 && { cmp -s "$tmp/out" "$tmp/best.want" && ok "best output as before" ||
    fail "best output: $(head -c 300 "$tmp/out")"; }
run "export of a read-only experiment" export "$exp" --csv "$tmp/results.csv"
expect_rc 0 && { cmp -s "$tmp/results.csv" "$exp/results.csv" &&
    ok "exported results.csv as written by run" || fail "exported results.csv differs"; }

# ---- (b) the disk fills up during a sweep -------------------------------------
# 1 MiB holds the schema and ~190 reports: a sweep of 300 trials outgrows it
# about 25 trials in (most of the space is WAL, which is checkpointed later).
mount -t tmpfs -o size=1m tmpfs "$tmp/full" || { fail "mount a second tmpfs"; exit 1; }
exp="$tmp/full/exp"
db="$exp/experiment.db"
run "sweep outgrowing the disk" run "$tmp/big.json" --storage "$exp" --quiet
expect_rc 1
expect_err "tune: $db: store: commit: database or disk is full (uncommitted writes were\
 rolled back)"
[ "$(df --output=avail "$tmp/full" | tail -1 | tr -d ' ')" = 0 ] && ok "the disk is full" ||
    fail "the disk is not full: $(df "$tmp/full" | tail -1)"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check' 2>&1)" = ok ] && ok "integrity_check on a full disk" ||
    fail "integrity_check: $(sqlite3 "$db" 'PRAGMA integrity_check' 2>&1 | head -3)"
n=$(finished "$db")
[ "$n" -gt 0 ] && [ "$n" -lt 300 ] && ok "$n trials finished before the disk filled" ||
    fail "$n trials finished before the disk filled"
run "status on a full disk" status "$exp"
expect_rc 0
grep -q "^Trials: 300 (" "$tmp/out" && ok "status counts the trials" ||
    fail "status output: $(head -3 "$tmp/out")"
# Freed space: the sweep resumes and ends with every trial.
mount -o remount,size=64m "$tmp/full" || { fail "grow the tmpfs"; exit 1; }
run "resume once space is freed" resume "$exp" --quiet
expect_rc 0
[ "$(finished "$db")" = 300 ] && ok "all 300 trials finished after resume" ||
    fail "$(finished "$db") of 300 trials finished after resume"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] && ok "integrity_check after resume" ||
    fail "integrity_check after resume"

# ---- (b') a nearly full disk: the WAL index (-shm) cannot grow -----------------
# 24 KiB holds the empty database but not the 32 KiB shared-memory index that
# WAL needs; SQLite reports SQLITE_IOERR_SHMSIZE, the system says ENOSPC.
mount -t tmpfs -o size=24k tmpfs "$tmp/tiny" || { fail "mount a third tmpfs"; exit 1; }
exp="$tmp/tiny/exp"
run "sweep on a nearly full disk" run "$tmp/small.json" --storage "$exp" --quiet
expect_rc 1
expect_err "tune: $exp/experiment.db: store: begin transaction: disk I/O error (No space left\
 on device)"

[ "$fails" = 0 ] && echo "ok: all store fault checks passed" || echo "$fails failure(s)"
[ "$fails" = 0 ]
