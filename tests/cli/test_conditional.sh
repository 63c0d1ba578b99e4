#!/usr/bin/env bash
# End to end: conditional parameters (a choice of objects, Ray's form) through
# `tune run` with a command objective.
#  (a) random search: results.csv has config/opt/name, config/opt/momentum,
#      config/opt/nesterov and config/opt/beta1; row by row, the cells of the
#      option not chosen are empty and the others hold values in range; the
#      score the script computed from the present parameter; params.json and
#      progress.csv agree; the report is written; `tune status` names the best
#      trial's present parameters only;
#  (b) tpe runs on the same space with the same checks;
#  (c) `tune validate` refuses gp with the exact message and exit 2;
#  (d) a command placeholder naming an absent parameter fails that trial with
#      the reason, and the trials that have it run.
# Usage: test_conditional.sh TUNE_BINARY
set -u
TUNE=$1
tmp=$(mktemp -d /tmp/tune-conditional-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# The score is the momentum for sgd, beta1 for adam, read from TUNE_TRIAL_PARAMS.
cat >"$tmp/train.sh" <<'SH'
#!/bin/sh
p=$TUNE_TRIAL_PARAMS
m=$(printf '%s' "$p" | sed -n 's/.*"momentum":\([-0-9.eE+]*\).*/\1/p')
b=$(printf '%s' "$p" | sed -n 's/.*"beta1":\([-0-9.eE+]*\).*/\1/p')
if [ -n "$m" ]; then s=$m; else s=$b; fi
echo "tune-report {\"score\": $s}"
SH
chmod +x "$tmp/train.sh"

write_config() { # file algorithm
    cat >"$1" <<JSON
{"name": "cond", "metric": "score", "mode": "max", "num_samples": 16, "seed": 11,
 "search": {"algorithm": "$2"},
 "param_space": {"lr": {"loguniform": [1e-4, 1e-1]},
                 "opt": {"choice": [{"name": "sgd", "momentum": {"uniform": [0.5, 0.99]},
                                     "nesterov": true},
                                    {"name": "adam", "beta1": {"uniform": [0.8, 0.95]}}]}},
 "trainer": {"type": "command", "argv": ["$tmp/train.sh"]}}
JSON
}

check_experiment() { # dir label
    local exp=$1 what=$2
    local res="$exp/results.csv"
    local head
    head=$(head -1 "$res" | tr -d '\r' | cut -d, -f1-9)
    [ "$head" = "trial_id,status,training_iteration,config/lr,config/opt/name,config/opt/momentum,config/opt/nesterov,config/opt/beta1,score" ] &&
        ok "$what: results.csv columns" || fail "$what: results.csv header: $head"
    [ "$(tail -n +2 "$res" | wc -l)" = 16 ] && ok "$what: 16 trials" ||
        fail "$what: $(tail -n +2 "$res" | wc -l) trials"
    local bad
    bad=$(tr -d '\r' <"$res" | tail -n +2 | awk -F, '
        {
            id = $1
            if ($2 != "TERMINATED") print "trial " id ": " $2
            if ($4 < 1e-4 || $4 >= 0.1) print "trial " id ": lr " $4
            if ($5 == "sgd") {
                n_sgd++
                if ($6 == "" || $6 < 0.5 || $6 >= 0.99) print "trial " id ": momentum \"" $6 "\""
                if ($7 != "True") print "trial " id ": nesterov \"" $7 "\""
                if ($8 != "") print "trial " id ": sgd with beta1 \"" $8 "\""
                if ($9 != $6) print "trial " id ": score " $9 ", momentum " $6
            } else if ($5 == "adam") {
                n_adam++
                if ($6 != "" || $7 != "") print "trial " id ": adam with momentum \"" $6 "\" nesterov \"" $7 "\""
                if ($8 == "" || $8 < 0.8 || $8 >= 0.95) print "trial " id ": beta1 \"" $8 "\""
                if ($9 != $8) print "trial " id ": score " $9 ", beta1 " $8
            } else {
                print "trial " id ": opt/name \"" $5 "\""
            }
        }
        END { if (n_sgd < 2 || n_adam < 2) print "options drawn: sgd " n_sgd ", adam " n_adam }')
    [ -z "$bad" ] && ok "$what: every row holds its option's parameters only" || fail "$what: $bad"
    # params.json holds the present parameters only, as the row says.
    local id status iters lr name m nest b1 _
    while IFS=, read -r id status iters lr name m nest b1 _; do
        local dir want
        dir=$(printf '%s/trials/trial_%06d' "$exp" "$id")
        if [ "$name" = sgd ]; then
            want=$(printf '{"lr":%s,"opt":{"name":"sgd","momentum":%s,"nesterov":true}}' "$lr" "$m")
        else
            want=$(printf '{"lr":%s,"opt":{"name":"adam","beta1":%s}}' "$lr" "$b1")
        fi
        [ "$(cat "$dir/params.json")" = "$want" ] ||
            fail "$what: trial $id params.json: $(cat "$dir/params.json"), want $want"
    done < <(tr -d '\r' <"$res" | tail -n +2)
    # progress.csv: one row per trial, its config cells as results.csv's.
    local p1 p2
    p1=$(tr -d '\r' <"$exp/progress.csv" | head -1 | tr , '\n' | grep -n '^config/opt/beta1$' | cut -d: -f1)
    [ -n "$p1" ] && ok "$what: progress.csv has config/opt/beta1" || fail "$what: progress.csv header"
    p2=$(tr -d '\r' <"$exp/progress.csv" | tail -n +2 | awk -F, -v c="$p1" '$c == ""' | wc -l)
    p3=$(tr -d '\r' <"$res" | tail -n +2 | awk -F, '$8 == ""' | wc -l)
    [ "$p2" = "$p3" ] && ok "$what: progress.csv leaves beta1 empty in $p2 rows, as results.csv" ||
        fail "$what: progress.csv has $p2 empty beta1 cells, results.csv $p3"
    [ -s "$exp/report.html" ] && ok "$what: report written" || fail "$what: no report.html"
    # `tune status` names the best trial's present parameters only.
    local line
    line=$("$TUNE" status "$exp" | grep '^Best so far:')
    case "$line" in
        *opt/name=sgd,\ opt/momentum=*,\ opt/nesterov=true) ok "$what: status names sgd's parameters" ;;
        *opt/name=adam,\ opt/beta1=*)
            case "$line" in *momentum*|*nesterov*) fail "$what: status: $line" ;;
                *) ok "$what: status names adam's parameters" ;; esac ;;
        *) fail "$what: status: $line" ;;
    esac
}

write_config "$tmp/random.json" random
"$TUNE" run "$tmp/random.json" --storage "$tmp/random" --quiet >"$tmp/out" 2>"$tmp/err" &&
    ok "random search run" || fail "random run: $(head -c 600 "$tmp/err")"
check_experiment "$tmp/random" random

write_config "$tmp/tpe.json" tpe
sed -i 's/"algorithm": "tpe"}/"algorithm": "tpe", "n_startup_trials": 4}/' "$tmp/tpe.json"
"$TUNE" run "$tmp/tpe.json" --storage "$tmp/tpe" --quiet >"$tmp/out" 2>"$tmp/err" &&
    ok "tpe run" || fail "tpe run: $(head -c 600 "$tmp/err")"
check_experiment "$tmp/tpe" tpe

write_config "$tmp/gp.json" gp
"$TUNE" validate "$tmp/gp.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
want="tune: $tmp/gp.json:2:26: search.algorithm: search algorithm \"gp\" cannot search conditional parameters ('opt/momentum' exists only for some values of 'opt/name'): use \"tpe\" or \"random\""
[ "$rc" = 2 ] && [ "$(cat "$tmp/err")" = "$want" ] && ok "validate refuses gp" ||
    fail "validate gp: exit $rc, $(cat "$tmp/err") (want $want)"

# (d) a command placeholder of an absent parameter fails that trial, saying why.
write_config "$tmp/ph.json" random
sed -i 's|"argv": \["\([^"]*\)"\]|"argv": ["\1", "{opt/momentum}"]|' "$tmp/ph.json"
grep -q '{opt/momentum}' "$tmp/ph.json" || fail "placeholder config: $(cat "$tmp/ph.json")"
"$TUNE" run "$tmp/ph.json" --storage "$tmp/ph" --quiet >"$tmp/out" 2>"$tmp/err"
n_adam=$(tr -d '\r' <"$tmp/ph/results.csv" | awk -F, '$5 == "adam"' | wc -l)
n_adam_err=$(tr -d '\r' <"$tmp/ph/results.csv" | awk -F, '$5 == "adam" && $2 == "ERROR"' |
    grep -c "trainer.argv\[1\]: '{opt/momentum}' has no value in this trial (a conditional parameter of an option not chosen; TUNE_TRIAL_PARAMS holds the present ones)")
n_sgd_ok=$(tr -d '\r' <"$tmp/ph/results.csv" | awk -F, '$5 == "sgd" && $2 == "TERMINATED"' | wc -l)
n_all=$(tail -n +2 "$tmp/ph/results.csv" | wc -l)
[ "$n_adam" -ge 2 ] && [ "$n_adam_err" = "$n_adam" ] && [ $((n_adam + n_sgd_ok)) = "$n_all" ] &&
    ok "absent placeholder: $n_adam adam trials fail with the reason, $n_sgd_ok sgd trials run" ||
    fail "absent placeholder: adam $n_adam (failed with the reason: $n_adam_err), sgd ok $n_sgd_ok of $n_all; $(head -c 400 "$tmp/err")"

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all conditional checks passed"
