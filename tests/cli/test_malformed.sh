#!/usr/bin/env bash
# Malformed inputs end to end: runs the `tune` binary on every case listed in
# tests/malformed/cases.txt (configs, data and vocabulary files) and checks the
# exit status, that stderr is exactly the expected one line (file:line:column:
# key: what was expected), that nothing crashed or hung, and that no experiment
# folder or other file was written for any failing case.
# Usage: test_malformed.sh TUNE_BINARY SOURCE_ROOT
set -u
TUNE=$1
SRC=$2
CASES="$SRC/tests/malformed"
[ -x "$TUNE" ] || { echo "FAIL: no tune binary at $TUNE"; exit 1; }
[ -f "$CASES/cases.txt" ] || { echo "FAIL: no $CASES/cases.txt"; exit 1; }
tmp=$(mktemp -d /tmp/tune-malformed-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
checked=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Paths in messages are as given on the command line, and paths in the configs
# are relative to the current folder: run from a private copy of the cases, so
# that a stray write (a default tune_results/ folder) shows up and the source
# tree is never touched.
cp -R "$CASES" "$tmp/work" || { echo "cannot copy $CASES"; exit 1; }
mkdir "$tmp/store"
cd "$tmp/work" || exit 1
(find . -print | LC_ALL=C sort) >"$tmp/before"

# check CMD FILE WANT_RC WANT_MSG STORAGE: runs one command, compares exit status and stderr.
check() {
    local cmd=$1 file=$2 want_rc=$3 want=$4 storage=$5 rc
    if [ "$cmd" = run ]; then
        timeout 60 "$TUNE" run "$file" --storage "$storage" >"$tmp/out" 2>"$tmp/err"
    else
        timeout 60 "$TUNE" validate "$file" >"$tmp/out" 2>"$tmp/err"
    fi
    rc=$?
    checked=$((checked + 1))
    local what="$cmd $file"
    if [ "$rc" -eq 124 ]; then
        fail "$what: timed out"
        return
    fi
    if [ "$rc" -ge 128 ]; then
        fail "$what: crashed (exit $rc): $(head -c 600 "$tmp/err")"
        return
    fi
    [ "$rc" -eq "$want_rc" ] || fail "$what: exit $rc, expected $want_rc"
    if [ "$want" = - ]; then
        [ ! -s "$tmp/err" ] || fail "$what: expected no stderr, got: $(head -c 600 "$tmp/err")"
    elif ! printf '%s\n' "$want" | cmp -s - "$tmp/err"; then
        fail "$what: stderr differs
  want: $want
  got:  $(head -c 600 "$tmp/err")"
    fi
    if [ "$want_rc" -ne 0 ]; then
        [ ! -e "$storage" ] || fail "$what: created $storage for a failing case"
        [ "$cmd" = run ] || [ ! -s "$tmp/out" ] ||
            fail "$what: printed to stdout: $(head -c 300 "$tmp/out")"
    fi
}

n=0
controls=0
while read -r cmd file rc msg; do
    case "$cmd" in '' | '#'*) continue ;; esac
    n=$((n + 1))
    if [ "$cmd" != run ] && [ "$cmd" != validate ]; then
        fail "cases.txt: case $n: unknown command '$cmd'"
        continue
    fi
    if [ -z "$msg" ]; then
        fail "cases.txt: case $n ($file): no expected message"
        continue
    fi
    check "$cmd" "$file" "$rc" "$msg" "$tmp/store/case$n"
    if [ "$rc" -eq 0 ]; then
        controls=$((controls + 1))
        # A control run proves --storage is honoured, so the absence of the
        # folder for the failing cases means something.
        if [ "$cmd" = run ]; then
            for f in experiment.db results.csv progress.csv; do
                [ -f "$tmp/store/case$n/$f" ] || fail "control $file: no $f in its storage"
            done
        fi
    elif [ "$cmd" = validate ]; then
        # A config that does not validate fails `tune run` the same way, before writing anything.
        check run "$file" "$rc" "$msg" "$tmp/store/run$n"
    fi
done <"$CASES/cases.txt"

malformed=$((n - controls))
[ "$malformed" -ge 30 ] || fail "only $malformed malformed cases in cases.txt (at least 30 expected)"

(find . -print | LC_ALL=C sort) >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" ||
    fail "files appeared or vanished in the working folder: $(diff "$tmp/before" "$tmp/after" | head -5)"
stray=$(cd "$tmp/store" && ls | grep -v '^case' | head -3)
[ -z "$stray" ] || fail "unexpected experiment folders: $stray"

echo "$malformed malformed cases, $controls controls, $checked commands, $fails failure(s)"
[ "$fails" -eq 0 ]
