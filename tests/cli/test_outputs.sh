#!/usr/bin/env bash
# test_outputs.sh - what `tune export --csv FILE` and `tune report -o FILE`
# write, and what tune shows of program output:
#   1. only regular files: the experiment's own files (by name, by hard link,
#      a -wal not there yet), folders, devices (/dev/stdout too), FIFOs are
#      refused with a message naming the path; the store stays a database.
#   2. "-" is standard output; a symbolic link is written through and stays
#      a link.
#   3. concurrent exports to one path leave one whole file and no temporary;
#      a temporary left by a dead writer is removed by the next export.
#   4. metric names a program prints: control characters fail the report
#      (the message shown escaped), odd but valid names give a CSV with one
#      header cell per column (pandas reads it when installed); escapes in
#      program output never reach the terminal raw (warnings, tune status).
# Usage: test_outputs.sh TUNE
set -u
tune=$1
[ -x "$tune" ] || { echo "FAIL: no tune binary at '$tune'"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
esc=$(printf '\033')

cat >"$tmp/small.json" <<JSON
{"name": "outputs", "metric": "score", "mode": "max", "num_samples": 6, "seed": 3,
 "max_concurrent_trials": 2,
 "param_space": {"lr": {"loguniform": [1e-4, 1e-1]}},
 "trainer": {"type": "synthetic", "iterations": 3}}
JSON
exp="$tmp/exp"
"$tune" run "$tmp/small.json" --storage "$exp" --quiet >/dev/null 2>"$tmp/run.err" ||
    { echo "FAIL: the sweep did not run: $(cat "$tmp/run.err")"; exit 1; }
"$tune" export "$exp" --csv "$tmp/ref.csv" || fail "export to a plain file"
is_db() { [ "$(head -c 15 "$exp/experiment.db")" = "SQLite format 3" ]; }

# ---- 1. refused targets --------------------------------------------------------
refused() { # what expected-text tune-args...
    local what=$1 text=$2
    shift 2
    timeout 20 "$tune" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
        fail "$what: exit $rc"
    elif ! grep -qF -- "$text" "$tmp/err"; then
        fail "$what: message is $(cat "$tmp/err")"
    else
        ok "$what: refused ($(head -c 160 "$tmp/err"))"
    fi
}
refused "export over experiment.db" "it is the experiment's store" \
    export "$exp" --csv "$exp/experiment.db"
is_db || fail "experiment.db is no longer a database"
"$tune" status "$exp" >/dev/null || fail "tune status after the refused export"
refused "export over experiment.db-wal (not there)" "it is the experiment's store" \
    export "$exp" --csv "$exp/experiment.db-wal"
# (reading the store may create its -wal; it must not be a CSV)
[ -e "$exp/experiment.db-wal" ] && head -c 8 "$exp/experiment.db-wal" | grep -q trial_id &&
    fail "a CSV was written as the -wal file"
refused "export over experiment.db-shm" "experiment.db-shm" \
    export "$exp" --csv "$exp/experiment.db-shm" --progress
ln "$exp/experiment.db" "$tmp/alias.csv"
refused "export over a hard link to the store" "it is the experiment's store" \
    export "$exp" --csv "$tmp/alias.csv"
mkdir "$tmp/sub"
refused "export over the store by another spelling" "it is the experiment's store" \
    export "$exp" --csv "$tmp/sub/../exp/experiment.db"
refused "report over experiment.db" "it is the experiment's store" \
    report "$exp" -o "$exp/experiment.db"
is_db || fail "experiment.db is no longer a database"
refused "export into a folder" "it is a directory" export "$exp" --csv "$tmp/sub"
refused "report into a folder" "it is a directory" report "$exp" -o "$tmp/sub"
refused "export to /dev/null" "'/dev/null': it is a character device" \
    export "$exp" --csv /dev/null
[ -c /dev/null ] || fail "/dev/null is no longer a device"
# /dev/stdout as a pipe: a link to no file, refused (into a regular file, it
# would be written through to that file).
"$tune" export "$exp" --csv /dev/stdout 2>"$tmp/err" | cat >/dev/null
[ "${PIPESTATUS[0]}" -ne 0 ] && grep -qF "/dev/stdout" "$tmp/err" &&
    ok "export to /dev/stdout (a pipe): refused ($(cat "$tmp/err"))" ||
    fail "export to /dev/stdout (a pipe) was not refused"
[ -L /dev/stdout ] || [ ! -e /dev/stdout ] || fail "/dev/stdout was replaced"
mkfifo "$tmp/fifo"
refused "export to a FIFO" "it is a FIFO" export "$exp" --csv "$tmp/fifo"
[ -p "$tmp/fifo" ] || fail "the FIFO was replaced"
"$tune" report "$exp" -o "$exp/experiment.db" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a refused report path must exit 2"

# ---- 2. standard output and links --------------------------------------------------
"$tune" export "$exp" --csv - >"$tmp/stdout.csv" 2>"$tmp/err" || fail "--csv -: $(cat "$tmp/err")"
cmp -s "$tmp/stdout.csv" "$tmp/ref.csv" && ok "--csv - writes the CSV to stdout" ||
    fail "--csv - differs from the file export"
[ -e "$exp/-" ] || [ -e ./- ] && fail "a file named '-' was written"
"$tune" export "$exp" --csv - --progress | head -1 | grep -q '^trial_id,training_iteration' &&
    ok "--csv - --progress" || fail "--csv - --progress"
"$tune" report "$exp" -o - >"$tmp/stdout.html" 2>"$tmp/err" || fail "-o -: $(cat "$tmp/err")"
grep -q "</html>" "$tmp/stdout.html" && ok "report -o - writes the page to stdout" ||
    fail "report -o - wrote no page"
echo old >"$tmp/target.csv"
ln -s target.csv "$tmp/link.csv"
"$tune" export "$exp" --csv "$tmp/link.csv" 2>"$tmp/err" || fail "export through a link: $(cat "$tmp/err")"
[ -L "$tmp/link.csv" ] && cmp -s "$tmp/target.csv" "$tmp/ref.csv" &&
    ok "a link is written through and stays a link" || fail "the link was replaced or not written"
ln -s "$tmp/nowhere.csv" "$tmp/dangling.csv"
refused "export through a dangling link" "cannot write through the symbolic link" \
    export "$exp" --csv "$tmp/dangling.csv"
[ -L "$tmp/dangling.csv" ] || fail "the dangling link was replaced"

# ---- 3. concurrent writers and stale temporaries ---------------------------------------
"$tune" export "$exp" --csv "$tmp/prog-ref.csv" --progress || fail "progress export"
for round in 1 2 3; do
    pids=()
    for k in 1 2 3 4; do
        "$tune" export "$exp" --csv "$tmp/both.csv" --progress &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail "a concurrent export failed"; done
    cmp -s "$tmp/both.csv" "$tmp/prog-ref.csv" || fail "round $round: concurrent exports mixed"
done
ls -A "$tmp" | grep -q '\.tmp\.' && fail "temporary files left: $(ls -A "$tmp" | grep '\.tmp\.')"
ok "4 concurrent exports to one path, 3 times: one whole file, no temporary left"
# A temporary of a writer that died (the name tune gives it: host hash, pid).
h=2166136261
host=$(uname -n)
for ((i = 0; i < ${#host}; i++)); do
    c=$(printf '%d' "'${host:i:1}")
    h=$(((h ^ c) * 16777619 & 0xffffffff))
done
sh -c 'exit 0' &
dead=$!
wait $dead
stale=$(printf '%s/.r.csv.tmp.%08x-%d.Ab12Cd' "$tmp" "$h" "$dead")
live=$(printf '%s/.r.csv.tmp.%08x-%d.Ab12Cd' "$tmp" "$h" "$$")
echo half >"$stale"
echo half >"$live"
"$tune" export "$exp" --csv "$tmp/r.csv" || fail "export beside a stale temporary"
[ -e "$stale" ] && fail "the dead writer's temporary is still there"
[ -e "$live" ] || fail "a live writer's temporary was removed"
ok "a dead writer's temporary is removed by the next export"

# ---- 4. metric names and escapes from a program ---------------------------------------
cat >"$tmp/prog.sh" <<'SH'
#!/bin/sh
case "$1" in
    0) echo 'tune-report {"score": 1, "x,y \"q\"": 2, "caf\u00e9": 3, "configx/a": 4}' ;;
    1) echo 'tune-report {"score": 1, "a\u001b[2Jb": 2}' ;;
    2) printf 'dying \033]0;pwned\007 now \033[2J\n' >&2; exit 3 ;;
    *) echo 'tune-report {"score": 1, "config/lr": 2}' ;;
esac
SH
chmod +x "$tmp/prog.sh"
cat >"$tmp/cmd.json" <<JSON
{"name": "names", "metric": "score", "mode": "max", "num_samples": 4, "seed": 1,
 "max_concurrent_trials": 1, "max_failures": 0,
 "param_space": {"k": {"grid_search": [0, 1, 2, 3]}},
 "trainer": {"type": "command", "argv": ["$tmp/prog.sh", "{k}"]}}
JSON
"$tune" run "$tmp/cmd.json" --storage "$tmp/names" >"$tmp/run.out" 2>"$tmp/run.err"
"$tune" status "$tmp/names" >"$tmp/status.out" 2>&1
if grep -q "$esc" "$tmp/run.out" "$tmp/run.err" "$tmp/status.out"; then
    fail "a raw ESC reached the terminal: $(grep -l "$esc" "$tmp/run.out" "$tmp/run.err" "$tmp/status.out")"
else
    ok "no raw ESC in the run's output or tune status"
fi
grep -qF 'metric name '"'"'a\x1b[2Jb'"'"' is not UTF-8 text without control characters' \
    "$tmp/status.out" && ok "a name with ESC fails the report, shown escaped" ||
    fail "tune status does not show the refused name: $(cat "$tmp/status.out")"
grep -qF "'config/' columns are parameters" "$tmp/status.out" "$tmp/run.err" &&
    ok "config/... is refused" || fail "config/lr was not refused: $(cat "$tmp/status.out")"
grep -qF 'dying \x1b]0;pwned\x07 now \x1b[2J' "$tmp/status.out" "$tmp/run.err" &&
    ok "program stderr is shown escaped" || fail "stderr not shown escaped: $(cat "$tmp/status.out")"
"$tune" export "$tmp/names" --csv "$tmp/names.csv" || fail "export of the names sweep"
head -1 "$tmp/names.csv" | grep -qF 'config/k,score,"x,y ""q""",café,configx/a,time_total_s' &&
    ok "odd valid names: one quoted header cell each" || fail "header: $(head -1 "$tmp/names.csv")"
if /usr/bin/python3 -c "import pandas" 2>/dev/null; then
    /usr/bin/python3 - "$tmp/names.csv" <<'PY' && ok "pandas reads it" || fail "pandas"
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
c = list(d.columns)
i = c.index("time_total_s")  # the metrics come just before it, Ray's columns after
assert c[i - 4:i + 1] == ["score", 'x,y "q"', "café", "configx/a", "time_total_s"], c
assert len(c) == len(set(c)), c
assert len(d) == 16, len(d)  # the grid of 4, num_samples 4 times
# a program's error text is data: its control characters are shown escaped, never raw
assert not d["error"].fillna("").str.contains("\x1b").any(), list(d["error"])
assert d["error"].fillna("").str.contains(r"\\x1b\]0;pwned", regex=True).any(), list(d["error"])
PY
fi
[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
