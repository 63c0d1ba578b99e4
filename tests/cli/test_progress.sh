#!/usr/bin/env bash
# test_progress.sh - what `tune run` shows while a sweep runs:
#   1. without a terminal, each progress line carries the best trial so far:
#      the last one names the trial and value `tune best` gives;
#   2. --columns: a bad list is refused before anything runs (exit 2, the
#      message naming the column, no experiment folder); a metric no trial
#      reported is a warning after the run; tune resume takes the flag too;
#   3. in a terminal (a pseudo-terminal from script(1), 80 columns wide) the
#      live table never has a line wider than the terminal: columns that do
#      not fit are left out and named; --columns picks the table's columns.
# Usage: test_progress.sh TUNE
set -u
tune=$1
[ -x "$tune" ] || { echo "FAIL: no tune binary at '$tune'"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

cat >"$tmp/sweep.json" <<JSON
{"name": "progress", "metric": "val_accuracy", "mode": "max", "num_samples": 8, "seed": 5,
 "max_concurrent_trials": 2,
 "param_space": {"lr": {"loguniform": [1e-4, 1e-1]},
                 "batch_size": {"choice": [16, 32, 64]},
                 "warmup_steps": {"randint": [0, 11]},
                 "weight_decay": {"uniform": [0.0, 0.3]}},
 "trainer": {"type": "synthetic", "iterations": 6, "sleep_s": 0.1, "report_loss": true}}
JSON

# ---- 1. the line a log gets ------------------------------------------------------
"$tune" run "$tmp/sweep.json" --storage "$tmp/plain" >"$tmp/plain.out" 2>"$tmp/plain.err" ||
    fail "the sweep did not run: $(cat "$tmp/plain.err")"
last=$(grep ' (done)$' "$tmp/plain.out")
best=$("$tune" best "$tmp/plain")
id=$(sed -n 's/.*"trial_id":\([0-9]*\).*/\1/p' <<<"$best")
value=$(sed -n 's/.*"val_accuracy":\([-0-9.eE+]*\).*/\1/p' <<<"$best")
shown=$(sed -n 's/.*; best trial \([0-9]*\) val_accuracy=\([-0-9.eE+]*\) (done)$/\1 \2/p' <<<"$last")
if [ -n "$id" ] && [ -n "$shown" ] && [ "${shown%% *}" = "$id" ] &&
    awk -v a="${shown##* }" -v b="$value" 'BEGIN { d = a - b; exit !(d * d <= 1e-10 * b * b) }'; then
    ok "the last progress line names the best trial: $last"
else
    fail "progress line '$last' against tune best '$best'"
fi
grep -q '^progress: 0 pending, 0 running, [0-9]* terminated, [0-9]* stopped, 0 error; best trial' \
    <<<"$last" && ok "the line counts finished and stopped trials" || fail "counts: '$last'"
grep -q $'\033' "$tmp/plain.out" && fail "terminal escapes written to a file" ||
    ok "no terminal escapes without a terminal"

# ---- 2. --columns errors ----------------------------------------------------------
refused() { # what expected-message args...
    local what=$1 msg=$2; shift 2
    local rc=0
    "$tune" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ "$rc" = 2 ] && grep -qF -- "$msg" "$tmp/err"; then
        ok "$what: refused ($(head -1 "$tmp/err"))"
    else
        fail "$what: exit $rc, stderr: $(cat "$tmp/err")"
    fi
}
refused "a repeated column" "tune run: --columns: column 'config/lr' is named twice" \
    run "$tmp/sweep.json" --storage "$tmp/bad1" --columns lr,config/lr
refused "config/ of no parameter" \
    "tune run: --columns: column 'config/lrr': no parameter 'lrr' (parameters: lr, batch_size, warmup_steps, weight_decay)" \
    run "$tmp/sweep.json" --storage "$tmp/bad2" --columns=config/lrr
refused "a typo of a parameter" "unknown column 'batch_sizes': did you mean 'batch_size'?" \
    run "$tmp/sweep.json" --storage "$tmp/bad3" --columns lr,batch_sizes
refused "an empty column" "tune run: --columns: column 2 is empty" \
    run "$tmp/sweep.json" --storage "$tmp/bad4" --columns "lr,,val_loss"
refused "resume with a column always shown" "tune resume: --columns: column 'status' is always shown" \
    resume "$tmp/plain" --columns status
for d in bad1 bad2 bad3 bad4; do
    [ -e "$tmp/$d" ] && fail "$d: an experiment folder was made for a refused run"
done
"$tune" run "$tmp/sweep.json" --storage "$tmp/unrep" --columns lr,val_los >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] && grep -qF "tune: warning: --columns: no trial reported the metric(s) 'val_los'" "$tmp/err" &&
    ok "a metric no trial reported: a warning after the run" ||
    fail "unreported metric: exit $rc, stderr: $(cat "$tmp/err")"

# ---- 3. in a terminal -------------------------------------------------------------
command -v script >/dev/null || { fail "script(1) (util-linux) is needed for the terminal tests"; exit 1; }
in_tty() { # cols out args...: runs tune on a pseudo-terminal of cols x 40, its screen text in out
    local cols=$1 out=$2; shift 2
    local cmd
    printf -v cmd '%q ' "$tune" "$@"
    TERM=xterm script -qec "stty cols $cols rows 40; $cmd" /dev/null >"$out.raw" 2>&1
    local rc=$?
    # the screen's text: escape sequences and carriage returns removed
    sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$out.raw" | tr -d '\r' >"$out"
    return $rc
}
in_tty 80 "$tmp/tty80" run "$tmp/sweep.json" --storage "$tmp/tty80-exp" ||
    fail "the sweep in a terminal: $(tail -5 "$tmp/tty80")"
# the live table: every line before the run's closing "best:" line
table=$(sed '/^best: /,$d' "$tmp/tty80")
redraws=$(grep -c '^== progress == running' <<<"$table")
wide=$(awk 'length($0) > 80' <<<"$table" | head -3)
[ "$redraws" -ge 3 ] && [ -z "$wide" ] &&
    ok "80 columns: $redraws redraws, no line wider than 80" ||
    fail "80 columns: $redraws redraws; too wide: $wide"
grep -q '^Columns left out to fit: .*weight_decay' <<<"$table" &&
    ok "80 columns: the columns left out are named" || fail "no 'left out' line: $(tail -12 <<<"$table")"
grep -q '^| trial | status *| *lr | batch_size |.* val_accuracy |$' <<<"$table" &&
    ok "80 columns: trial, status, the first parameters and the metric stay" ||
    fail "80 columns header: $(grep '^| trial' <<<"$table" | tail -1)"
grep -qE '^\| [0-9]+ +\| RUNNING ' <<<"$table" && ok "running trials are shown live" ||
    fail "no RUNNING row in the live table"
grep -qE '^Trials: 8 \(.*[0-9]+ TERMINATED, [0-9]+ STOPPED' <<<"$table" &&
    grep -q '^Best so far: trial [0-9]* with val_accuracy=' <<<"$table" &&
    ok "counts of finished and stopped trials and the best so far" || fail "summary lines"

in_tty 120 "$tmp/tty120" run "$tmp/sweep.json" --storage "$tmp/tty120-exp" ||
    fail "the sweep in a 120-column terminal"
table=$(sed '/^best: /,$d' "$tmp/tty120")
grep -q '^| trial | status *| *lr | batch_size | warmup_steps | weight_decay | iter | time (s) | val_accuracy |$' \
    <<<"$table" && ! grep -q 'left out' <<<"$table" && [ -z "$(awk 'length($0) > 120' <<<"$table")" ] &&
    ok "120 columns: every column" || fail "120 columns: $(grep '^| trial' <<<"$table" | tail -1)"

in_tty 80 "$tmp/pick" run "$tmp/sweep.json" --storage "$tmp/pick-exp" --columns val_loss,lr ||
    fail "the sweep with --columns"
table=$(sed '/^best: /,$d' "$tmp/pick")
headers=$(grep '^| trial' <<<"$table" | sort -u)
[ -n "$headers" ] && [ -z "$(grep -vE '^\| trial \| status +\| val_loss \| +lr \|$' <<<"$headers")" ] &&
    ok "--columns val_loss,lr: exactly those, in that order" || fail "--columns header: $headers"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
