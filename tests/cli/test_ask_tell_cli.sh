#!/usr/bin/env bash
# `tune ask DIR` / `tune tell DIR ID` from a shell loop, one process per call:
# - a loop that asks 10 trials, computes each value with awk from the
#   printed config and tells it gives results.csv equal, row by row, to
#   `tune run` of the same config whose command trainer computes the same
#   value (same seed, concurrency 1), for random search and for TPE (whose
#   model each call rebuilds from the store);
# - trials asked and not told stay open between processes (two asks before
#   their tells, told in the other order);
# - `tune step` reports intermediate values under ASHA ('prune' exits 3 and
#   ends the trial as the scheduler decided): rows equal tune run's;
# - an ask past num_samples exits 3; a tell of an unknown trial, of a told
#   one, or with bad options exits 2 with a clear message;
# - failed (retried up to max_failures, then ERROR with the reason) and
#   pruned (STOPPED) are recorded;
# - each call holds the folder's lock only while it runs: a call waits for
#   another holder (--wait), two tells started together both succeed, one
#   with --wait 0 is refused; `tune run`/`tune resume` on the folder and
#   `tune ask` on a folder `tune run` made are refused.
# Usage: test_ask_tell_cli.sh TUNE
set -u
tune=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# The objective: a value of x, n and opt, computed by awk alike in both flows.
cat >"$tmp/value.sh" <<'SH'
#!/bin/sh
awk -v x="$1" -v n="$2" -v opt="$3" 'BEGIN {
    v = -(x - 0.5) * (x - 0.5) + n / 10 + (opt == "b" ? 0.3 : 0)
    printf "%.17g\n", v }'
SH
cat >"$tmp/prog.sh" <<SH
#!/bin/sh
echo "tune-report {\"score\": \$("$tmp/value.sh" "\$1" "\$2" "\$3")}"
SH
chmod +x "$tmp/value.sh" "$tmp/prog.sh"

space='"param_space": {"x": {"uniform": [-2, 2]}, "n": {"randint": [1, 6]},
                       "opt": {"choice": ["a", "b"]}}'
# config NAME SEARCH [TRAINER]: the study, with or without the command trainer.
config() {
    local trainer=""
    [ -n "${3:-}" ] && trainer=", \"trainer\": {\"type\": \"command\", \"argv\": [\"$tmp/prog.sh\", \"{x}\", \"{n}\", \"{opt}\"]}"
    echo "{\"name\": \"asktell\", \"metric\": \"score\", \"mode\": \"max\", \"num_samples\": 10,
      \"seed\": 11, \"max_concurrent_trials\": 1, \"max_failures\": 1, $space,
      \"search\": $2 $trainer}" >"$1"
}

# One line of `tune ask`'s output -> "ID X N OPT".
fields() {
    sed -E 's/.*"trial_id": ?([0-9]+).*"x": ?([^,}]+).*"n": ?([^,}]+).*"opt": ?"([^"]*)".*/\1 \2 \3 \4/'
}

# compare A B: results.csv of two folders, row by row, on the columns that
# do not depend on time, host or process.
compare() {
    python3 - "$1/results.csv" "$2/results.csv" <<'PY'
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
cols = ["trial_id", "status", "attempts", "score", "training_iteration", "error",
        "config/x", "config/n", "config/opt"]
assert len(a) == len(b) == 10, (len(a), len(b))
for ra, rb in zip(a, b):
    for c in cols:
        assert ra[c] == rb[c], (c, ra, rb)
assert len({r["config/x"] for r in a}) == 10
PY
}

for search in '{"algorithm": "random"}' '{"algorithm": "tpe", "n_startup_trials": 3}'; do
    label=$(echo "$search" | sed -E 's/.*"algorithm": "([a-z]+)".*/\1/')
    config "$tmp/ask_$label.json" "$search"
    config "$tmp/run_$label.json" "$search" trainer
    "$tune" run "$tmp/run_$label.json" --storage "$tmp/run_$label" --quiet >"$tmp/run.out" 2>&1 ||
        fail "$label: tune run: $(cat "$tmp/run.out")"
    dir="$tmp/ask_$label"
    asked=0 bad="" code=0
    while :; do
        line=$("$tune" ask "$dir" --config "$tmp/ask_$label.json" 2>"$tmp/ask.err") || {
            code=$?
            break
        }
        [ "$(printf '%s\n' "$line" | wc -l)" = 1 ] || bad="more than one line: $line"
        set -- $(printf '%s\n' "$line" | fields)
        "$tune" tell "$dir" "$1" --value "$("$tmp/value.sh" "$2" "$3" "$4")" 2>"$tmp/tell.err" ||
            bad="tell $1: $(cat "$tmp/tell.err")"
        asked=$((asked + 1))
        [ $asked -le 10 ] || break
    done
    [ -z "$bad" ] && [ $asked = 10 ] && ok "$label: 10 trials asked and told from a shell loop" ||
        fail "$label: asked $asked: $bad"
    [ $code = 3 ] && grep -q "all 10 trials were asked" "$tmp/ask.err" &&
        ok "$label: the 11th ask exits 3, saying so" ||
        fail "$label: 11th ask: exit $code, $(cat "$tmp/ask.err")"
    compare "$dir" "$tmp/run_$label" && ok "$label: results.csv equals tune run's, row by row" ||
        fail "$label: results.csv differs from tune run's"
done

# Intermediate values with `tune step` under ASHA: 'prune' ends the trial as
# the scheduler decided; the others are told complete without a value. The
# same rows as `tune run` whose program reports the same four values.
cat >"$tmp/steps.sh" <<'SH'
#!/bin/sh
for i in 1 2 3 4; do
    echo "tune-report {\"score\": $(awk -v x="$1" -v i=$i 'BEGIN { printf "%.17g", x * i }')}"
done
SH
chmod +x "$tmp/steps.sh"
for kind in ask run; do
    trainer=""
    [ $kind = run ] && trainer=", \"trainer\": {\"type\": \"command\", \"argv\": [\"$tmp/steps.sh\", \"{x}\"]}"
    echo "{\"name\": \"steps\", \"metric\": \"score\", \"mode\": \"max\", \"num_samples\": 8,
      \"seed\": 5, \"max_concurrent_trials\": 1, \"param_space\": {\"x\": {\"uniform\": [0, 1]}},
      \"scheduler\": {\"type\": \"asha\", \"max_t\": 8, \"grace_period\": 1,
                    \"reduction_factor\": 2} $trainer}" >"$tmp/steps_$kind.json"
done
"$tune" run "$tmp/steps_run.json" --storage "$tmp/steps_run" --quiet >"$tmp/run.out" 2>&1 ||
    fail "steps: tune run: $(cat "$tmp/run.out")"
sd="$tmp/steps_ask" bad="" pruned=0
while line=$("$tune" ask "$sd" --config "$tmp/steps_ask.json" 2>/dev/null); do
    id=$(printf '%s\n' "$line" | sed -E 's/.*"trial_id": ?([0-9]+).*/\1/')
    x=$(printf '%s\n' "$line" | sed -E 's/.*"x": ?([^,}]+).*/\1/')
    stopped=0
    for i in 1 2 3 4; do
        answer=$("$tune" step "$sd" "$id" --value "$(awk -v x="$x" -v i=$i 'BEGIN { printf "%.17g", x * i }')")
        code=$?
        if [ $code = 3 ] && [ "$answer" = prune ]; then
            stopped=1 pruned=$((pruned + 1))
            break
        fi
        [ $code = 0 ] && [ "$answer" = continue ] || bad="step $id $i: exit $code '$answer'"
    done
    [ $stopped = 1 ] || "$tune" tell "$sd" "$id" 2>"$tmp/err" || bad="tell $id: $(cat "$tmp/err")"
done
[ -z "$bad" ] && [ $pruned -gt 0 ] && ok "tune step: $pruned of 8 trials pruned by ASHA" ||
    fail "steps: $bad (pruned $pruned)"
python3 - "$sd" "$tmp/steps_run" <<'PY' && ok "tune step: results and progress equal tune run's, row by row" || fail "tune step: rows differ from tune run's"
import csv, sys
def rows(d, f, cols):
    return [tuple(r[c] for c in cols) for r in csv.DictReader(open(f"{d}/{f}"))]
cols = ["trial_id", "status", "score", "training_iteration", "config/x"]
a, b = (rows(d, "results.csv", cols) for d in sys.argv[1:3])
assert a == b and len(a) == 8, (a, b)
statuses = {r[1] for r in a}
assert statuses == {"STOPPED", "TERMINATED"}, statuses
cols = ["trial_id", "training_iteration", "score"]
a, b = (rows(d, "progress.csv", cols) for d in sys.argv[1:3])
assert a == b and len(a) > 8, (a, b)
PY
"$tune" tell "$sd" 0 --state pruned 2>"$tmp/err"
[ $? = 2 ] && grep -q "trial 0 is not open" "$tmp/err" && ok "a trial ended by a step cannot be told" ||
    fail "tell after prune: $(cat "$tmp/err")"

# Two asks before their tells: both stay open between the processes.
config "$tmp/two.json" '{"algorithm": "random"}'
d="$tmp/two"
a=$("$tune" ask "$d" --config "$tmp/two.json") && b=$("$tune" ask "$d") ||
    fail "two asks: $a $b"
ida=$(echo "$a" | fields | cut -d' ' -f1)
idb=$(echo "$b" | fields | cut -d' ' -f1)
[ "$ida" = 0 ] && [ "$idb" = 1 ] && ok "two asks hand out trials 0 and 1" ||
    fail "two asks: '$a' '$b'"
# The same configurations as the sequential loop's first two trials.
xa=$(echo "$a" | fields | cut -d' ' -f2)
python3 - "$tmp/ask_random/results.csv" "$xa" <<'PY' && ok "trial 0's configuration is the loop's" || fail "trial 0's configuration differs from the loop's"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
assert float(r["config/x"]) == float(sys.argv[2]), (r["config/x"], sys.argv[2])
PY
"$tune" status "$d" >"$tmp/status.out" 2>&1
grep -q "2 RUNNING" "$tmp/status.out" && ok "both asked trials are RUNNING in the store" ||
    fail "status after two asks: $(cat "$tmp/status.out")"
"$tune" tell "$d" 1 --value 0.5 --metric extra=7 && "$tune" tell "$d" 0 --value 0.25 &&
    ok "told in the other order" || fail "tells of two open trials"
python3 - "$d/results.csv" <<'PY' && ok "both TERMINATED with their values" || fail "two asks: results.csv"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert [(x["trial_id"], x["status"], x["score"]) for x in r] == \
    [("0", "TERMINATED", "0.25"), ("1", "TERMINATED", "0.5")], r
assert r[1]["extra"] == "7", r[1]
PY

# Tells that cannot be.
"$tune" tell "$d" 0 --value 1 2>"$tmp/err"
[ $? = 2 ] && grep -q "trial 0 is not open (TERMINATED)" "$tmp/err" &&
    ok "a second tell of a trial exits 2" || fail "second tell: $(cat "$tmp/err")"
"$tune" tell "$d" 99 --value 1 2>"$tmp/err"
[ $? = 2 ] && grep -q "no trial 99" "$tmp/err" && ok "a tell of an unknown trial exits 2" ||
    fail "unknown trial: $(cat "$tmp/err")"
"$tune" tell "$d" 0 --value 1 --reason x 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--reason goes with --state failed" "$tmp/err" &&
    ok "--reason without failed exits 2" || fail "reason: $(cat "$tmp/err")"
"$tune" tell "$d" zero --value 1 2>"$tmp/err"
[ $? = 2 ] && grep -q "expected a trial id" "$tmp/err" && ok "a bad ID exits 2" ||
    fail "bad id: $(cat "$tmp/err")"
"$tune" ask "$tmp/nothing" 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--config CONFIG" "$tmp/err" &&
    ok "the first ask without --config says how to start" || fail "no config: $(cat "$tmp/err")"

# Failed (retried once, then ERROR with its reason) and pruned.
id=$("$tune" ask "$d" | fields | cut -d' ' -f1)
"$tune" tell "$d" "$id" 2>"$tmp/err"
[ $? = 2 ] && grep -q "reported nothing: a complete trial needs its result" "$tmp/err" &&
    ok "complete without a value (nor steps) exits 2, the trial still open" ||
    fail "no value: $(cat "$tmp/err")"
"$tune" tell "$d" "$id" --state failed --reason "out of memory" || fail "tell failed"
again=$("$tune" ask "$d" | fields | cut -d' ' -f1)
[ "$again" = "$id" ] && ok "a trial told failed is asked again (max_failures 1)" ||
    fail "retry: asked $again, expected $id"
"$tune" tell "$d" "$id" --state failed --reason "out of memory again" || fail "tell failed 2"
p=$("$tune" ask "$d" | fields | cut -d' ' -f1)
"$tune" tell "$d" "$p" --state pruned --value 0.125 || fail "tell pruned"
python3 - "$d/results.csv" "$id" "$p" <<'PY' && ok "ERROR with its reason, and STOPPED, recorded" || fail "failed/pruned: $(cat "$d/results.csv")"
import csv, sys
r = {x["trial_id"]: x for x in csv.DictReader(open(sys.argv[1]))}
e, p = r[sys.argv[2]], r[sys.argv[3]]
assert e["status"] == "ERROR" and e["attempts"] == "2" and e["error"] == "out of memory again", e
assert p["status"] == "STOPPED" and p["score"] == "0.125", p
PY

# The lock, per call: a holder makes a call wait (--wait) or fail (--wait 0).
hold() { # hold SECONDS: takes the folder's lock as tune does (fcntl), in the background
    python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[3], "w").close()
time.sleep(float(sys.argv[2]))' "$d/experiment.lock" "$1" "$tmp/held" &
    for _ in $(seq 100); do [ -f "$tmp/held" ] && break; sleep 0.05; done
}
x=$("$tune" ask "$d" | fields | cut -d' ' -f1)
y=$("$tune" ask "$d" | fields | cut -d' ' -f1)
rm -f "$tmp/held"
hold 1.5
"$tune" tell "$d" "$x" --value 1 --wait 0 2>"$tmp/err"
[ $? = 2 ] && grep -q "another tune run is using this experiment folder" "$tmp/err" &&
    ok "a tell with --wait 0 is refused while another holds the lock" ||
    fail "--wait 0: $(cat "$tmp/err")"
"$tune" ask "$d" --wait 0.2 2>"$tmp/err"
[ $? = 2 ] && grep -q "still after 0.2 s of waiting; try again when it ends" "$tmp/err" &&
    ok "an ask that waited 0.2 s for the holder gives up, saying so" ||
    fail "--wait 0.2: $(cat "$tmp/err")"
start=$(date +%s%N)
"$tune" tell "$d" "$x" --value 1 2>"$tmp/err1" &
p1=$!
"$tune" tell "$d" "$y" --value 2 2>"$tmp/err2" &
p2=$!
wait $p1
c1=$?
wait $p2
c2=$?
wait
took=$((($(date +%s%N) - start) / 1000000))
[ $c1 = 0 ] && [ $c2 = 0 ] && ok "two tells started together while the lock was held both succeed" ||
    fail "simultaneous tells: $c1 $(cat "$tmp/err1") / $c2 $(cat "$tmp/err2")"
[ $took -ge 500 ] && ok "they waited for the holder (${took} ms)" ||
    fail "the tells did not wait for the lock (${took} ms)"
python3 - "$d/results.csv" "$x" "$y" <<'PY' && ok "both tells recorded" || fail "tells after the wait"
import csv, sys
r = {x["trial_id"]: x for x in csv.DictReader(open(sys.argv[1]))}
assert r[sys.argv[2]]["score"] == "1" and r[sys.argv[3]]["score"] == "2", r
assert r[sys.argv[2]]["status"] == r[sys.argv[3]]["status"] == "TERMINATED", r
PY

# Runs on an ask/tell folder, and ask/tell on a run's folder, are refused.
"$tune" resume "$d" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "driven by ask and tell" "$tmp/err" &&
    ok "tune resume on an ask/tell folder exits 2" || fail "resume: $(cat "$tmp/err")"
"$tune" run "$tmp/run_random.json" --storage "$d" --resume --quiet >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "driven by ask and tell" "$tmp/err" &&
    ok "tune run --resume on an ask/tell folder exits 2" || fail "run --resume: $(cat "$tmp/err")"
"$tune" ask "$tmp/run_random" 2>"$tmp/err"
[ $? = 2 ] && grep -q "holds an experiment that \`tune run\` drives" "$tmp/err" &&
    ok "tune ask on a folder of tune run exits 2" || fail "ask on a run: $(cat "$tmp/err")"

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
