#!/usr/bin/env bash
# test_report.sh - the HTML report: `tune report DIR [-o FILE]` and
# the report that `tune run` writes when a sweep ends.
#
#   1. An ASHA sweep whose parameter names and values hold HTML and script
#      ("</script><script>...", "a&b \"q\" <i>x</i>", "x<y>&") and whose
#      trials partly fail. The page must be well-formed (Python's html.parser
#      with a balance check, and xmllint --html when installed), carry exactly
#      the store's data (checked against results.csv, progress.csv and
#      `tune best`), and let no stored string become markup. Its style and
#      script are store/report/report.css and report.js byte for byte, and
#      the build's embed tool refuses an asset holding "</".
#   2. Headless Chromium (when installed) runs its script: every plot must be
#      drawn with the expected number of marks, the rung milestones and the
#      log axes must be there, and the page's title must not have been changed
#      by a stored string. A screenshot must come out. The same for
#      configs/examples/minimize_loss.json (mode min, quantized log domains).
#      window.tuneReport(D), the page's one entry point, redraws every part
#      in place when called again with other data. Every part (history,
#      importance, curves of every attempt, slices, contour, parallel
#      coordinates, table) draws as many marks as the data says.
#   1b. The analysis: fANOVA importance bars on sweeps of known functions
#      (f = 10x + y: x first, main effects x, y, z in that order; an x-y
#      interaction: the pair's bar first); a two-metric TPE sweep with
#      retried attempts: the summary names the searcher, its options and the
#      seed; switching the metric, its direction, log y, best values, the
#      curves' time attribute and the contour's parameters redraws without
#      an error, and earlier attempts are drawn faded.
#   1c. Several objectives: the Pareto front (two objectives: a scatter with the
#      front ringed and joined; three: parallel coordinates) marks exactly the
#      hand-computed front, and the hypervolume over trials (its reference point
#      named) never goes down.
#   3. 1,000 trials of 10 iterations (ASHA, grace 1, reduction factor 4): the
#      page is at most 5 MB and is drawn and loaded in under 2 s.
#   4. Errors: usage, no experiment, an unwritable output, a report that cannot
#      be written at the end of a run (a warning; the run's exit status stays),
#      and the report after an interrupted run.
# Usage: test_report.sh TUNE SOURCE_ROOT BUILD_ROOT. Exits 77 only when nothing
# could be checked.
set -u
tune=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ok() {
    checks=$((checks + 1))
    echo "ok: $*"
}

py=
for p in /usr/bin/python3 python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import html.parser, json, csv' 2>/dev/null; then
        py=$p
        break
    fi
done
chrome=$(command -v chromium || command -v chromium-browser || true)
xmllint=$(command -v xmllint || true)
[ -n "$py" ] || echo "SKIP: no python3: the page's structure and data are not checked"
[ -n "$chrome" ] || echo "SKIP: chromium is not installed: the plots are not rendered"
[ -n "$xmllint" ] || echo "note: xmllint is not installed (apt package libxml2-utils)"

# Headless Chromium with a profile of its own; $1: mode (--dump-dom or
# --screenshot=FILE), $2: the page.
render() {
    HOME=$tmp/home timeout 60 "$chrome" --headless --no-sandbox --disable-gpu \
        --user-data-dir="$tmp/chrome" --no-first-run --hide-scrollbars --window-size=1280,2400 \
        "$1" "file://$2" 2>>"$tmp/chrome.log"
}

# ---- the checker: structure, data and escaping ------------------------------
cat >"$tmp/check.py" <<'EOF'
"""check.py REPORT DIR [--dom DOM]: REPORT is well-formed, holds DIR's data, escapes it.

With --dom, DOM is Chromium's --dump-dom of REPORT and the drawn plots are
checked too. Prints the figures, exits 1 with a message at the first failure.
"""
import csv, html.parser, json, math, re, sqlite3, sys

path, exp = sys.argv[1], sys.argv[2]
dom_path = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--dom" else None
text = open(path, encoding="utf-8").read()

def fail(msg):
    print("FAIL: %s: %s" % (path, msg))
    sys.exit(1)

VOID = {"meta", "br", "link", "img", "input", "hr", "wbr", "col", "area", "base",
        "source", "track", "embed", "param"}
# The page's own elements; anything else in the static HTML came from data.
STATIC = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "code", "b",
          "br", "table", "tr", "th", "td", "span", "noscript", "button", "div", "script"}

class Balance(html.parser.HTMLParser):
    def __init__(self, allowed):
        super().__init__(convert_charrefs=True)
        self.stack, self.count, self.allowed = [], {}, allowed
        self.scripts, self.cur_script, self.title = [], None, None
        self.in_title = False
        self.ids = set()
    def handle_starttag(self, tag, attrs):
        self.count[tag] = self.count.get(tag, 0) + 1
        if self.allowed is not None and tag not in self.allowed:
            fail("unexpected element <%s> at line %d" % (tag, self.getpos()[0]))
        a = dict(attrs)
        if "id" in a:
            if a["id"] in self.ids:
                fail("duplicate id %r" % a["id"])
            self.ids.add(a["id"])
        if tag == "script":
            self.cur_script = [a, ""]
        if tag == "title" and "head" in self.stack:
            self.in_title = self.title is None
        if tag not in VOID:
            self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        self.count[tag] = self.count.get(tag, 0) + 1
        if self.allowed is not None and tag not in self.allowed:
            fail("unexpected element <%s/>" % tag)
    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            fail("</%s> at line %d closes <%s>" % (tag, self.getpos()[0],
                                                    self.stack[-1] if self.stack else "nothing"))
        self.stack.pop()
        if tag == "script":
            self.scripts.append(self.cur_script)
            self.cur_script = None
        if tag == "title":
            self.in_title = False
    def handle_data(self, data):
        if self.cur_script is not None:
            self.cur_script[1] += data
        if self.in_title:
            self.title = (self.title or "") + data

p = Balance(STATIC)
p.feed(text)
p.close()
if p.stack:
    fail("unclosed elements: %s" % p.stack)
if not text.startswith("<!DOCTYPE html>"):
    fail("no <!DOCTYPE html>")
if len(p.scripts) != 2 or p.scripts[0][0].get("type") != "application/json":
    fail("expected the JSON data and one script, got %d script elements" % len(p.scripts))
if p.count.get("title") != 1 or p.count.get("style") != 1:
    fail("expected one <title> and one <style>")
if re.search(r"<(script|link|img|iframe)[^>]*\bsrc\s*=|https?://(?!www\.w3\.org/2000/svg)", text):
    fail("the page refers to something outside itself")
if "</script><script>document.title" in text:
    fail("a stored string was written unescaped")
data = json.loads(p.scripts[0][1])

# ---- the data against the experiment folder ------------------------------------
rows = list(csv.DictReader(open(exp + "/results.csv", newline="")))
prog = list(csv.DictReader(open(exp + "/progress.csv", newline="")))
# progress.csv keeps every attempt; the curves are each trial's current one (results.csv's attempts).
last = {int(r["trial_id"]): r["attempts"] for r in rows}
prog = [r for r in prog if r["attempt"] == last.get(int(r["trial_id"]))]
metric = data["metric"]
names = [q["name"] for q in data["params"]]
if len(data["trials"]) != len(rows):
    fail("%d trials in the page, %d in results.csv" % (len(data["trials"]), len(rows)))
status_names = [s[0] for s in data["statuses"]]
def num(s):
    return float("nan") if s == "" else float(s)
def same(a, b, rel=0.0):
    if isinstance(a, float) and math.isnan(a):
        return b is None
    if b is None:
        return False
    return a == b if rel == 0 else abs(a - b) <= rel * max(abs(a), abs(b))
for t, r in zip(data["trials"], rows):
    tid = int(r["trial_id"])
    if t[0] != tid or status_names[t[1]] != r["status"] or t[2] != int(r["training_iteration"]):
        fail("trial %d: %s differs from results.csv %s" % (tid, t[:3], r))
    for k, name in enumerate(names):
        v, c = t[4][k], r["config/" + name]
        if isinstance(v, str):
            ok_ = v == c
        elif isinstance(v, bool):
            ok_ = c == ("True" if v else "False")
        else:
            ok_ = same(num(c), float(v) if v is not None else None)
        if not ok_:
            fail("trial %d: %s = %r in the page, %r in results.csv" % (tid, name, v, c))
    if not same(num(r.get(metric, "")), t[5][0]):
        fail("trial %d: %s = %r in the page, %r in results.csv" % (tid, metric, t[5][0], r.get(metric)))
curves = {c[0]: c[1:] for c in data["curves"]}
by_trial = {}
for r in prog:
    by_trial.setdefault(int(r["trial_id"]), []).append(r)
for tid, reps in by_trial.items():
    c = curves.get(tid, [])
    if len(c) != 2 * len(reps):
        fail("trial %d: %d curve points, %d reports" % (tid, len(c) // 2, len(reps)))
    for i, r in enumerate(reps):
        # 6 significant digits: a relative error of at most 5e-6.
        if c[2 * i] != int(r["training_iteration"]) or not same(num(r[metric]), c[2 * i + 1], 5.1e-6):
            fail("trial %d: curve point %d is %s, the report says %s" % (tid, i, c[2*i:2*i+2], r))

# ---- the summary ----------------------------------------------------------------
m = re.search(r"<th>best trial</th><td><b>(\d+)</b>", text)
best = json.loads(open(exp + "/best.json").read())
if not m or int(m.group(1)) != best["trial_id"] or data["best"] != best["trial_id"]:
    fail("best trial %s in the page, %d from `tune best`" % (m and m.group(1), best["trial_id"]))
for s in set(r["status"] for r in rows):
    n = sum(r["status"] == s for r in rows)
    if not re.search(r">%s</span> %d\b" % (s, n), text):
        fail("the summary does not count %d %s" % (n, s))
# ASHA's rungs from the stored config, by Ray's formula (bracket 0 has them all).
db = sqlite3.connect("file:%s/experiment.db?mode=ro" % exp, uri=True)
cfg = json.loads(db.execute("SELECT config FROM experiment").fetchone()[0])
db.close()
sch = cfg.get("scheduler", {})
want = []
if sch.get("type") == "asha":
    g, rf = sch.get("grace_period", 1), sch.get("reduction_factor", 4)
    want = [g * rf ** k for k in range(int(math.log(sch.get("max_t", 100) / g) / math.log(rf) + 1))]
if data["rungs"] != want:
    fail("rungs %s, expected %s" % (data["rungs"], want))
print("well-formed, %d trials, %d reports, best %d, %d bytes" % (len(rows), len(prog), best["trial_id"], len(text)))
print("rungs %s" % data["rungs"])

if dom_path is None:
    sys.exit(0)
# ---- what the script drew --------------------------------------------------------
dom = open(dom_path, encoding="utf-8").read()
body = re.search(r"<body([^>]*)>", dom).group(1)
if 'data-report="ready"' not in body:
    fail("the script did not finish")
if "data-error=" in dom:
    fail("a plot failed: %s" % re.search(r'data-error="[^"]*"', dom).group(0))
def drawn_of(part):
    mm = re.search(r'<div[^>]*id="%s"[^>]*>' % part, dom)
    return int(re.search(r'data-drawn="(\d+)"', mm.group(0)).group(1))
finals = [t for t in data["trials"] if t[5][0] is not None and math.isfinite(t[5][0])]
varying = [q for q in data["params"] if q["domain"] != "constant"]
with_curve = [c for c in data["curves"] if any(v is not None and math.isfinite(v) for v in c[2::2])]
# Every attempt's reports: the last attempts' main metric is the curves' data.
last_att = {}
for sr in data["series"]:
    last_att[sr[0]] = max(last_att.get(sr[0], 0), sr[1])
for sr in data["series"]:
    if sr[1] == last_att[sr[0]]:
        c = [x for pt in zip(sr[2], sr[4][0] or [None] * len(sr[2])) for x in pt]
        if c != [x for cv in data["curves"] if cv[0] == sr[0] for x in cv[1:]]:
            fail("trial %d: its last attempt's series is not its curve" % sr[0])
fin = lambda v: v is not None and math.isfinite(v)
old = [sr for sr in data["series"] if sr[1] < last_att[sr[0]] and sr[4][0] and any(fin(v) for v in sr[4][0])]
imp = data["importance"]["by_metric"][0]
bars = 0 if "error" in imp else sum(v is not None for v in imp["params"]) + len(imp["pairs"])
# The table shows its first 200 rows until asked for all.
expect = {"curves": len(with_curve), "scatter": len(finals) * len(varying),
          "parallel": len(finals), "table": min(200, len(data["trials"])),
          "history": sum(1 for t in finals if status_names[t[1]] != "ERROR"),
          "contour": len(finals) if len(varying) >= 2 else 0, "importance": bars}
for part, n in expect.items():
    if drawn_of(part) != n:
        fail("%s: %d marks drawn, expected %d" % (part, drawn_of(part), n))
if int(re.search(r'<div[^>]*id="curves"[^>]*data-old="(\d+)"', dom).group(1)) != len(old):
    fail("%d earlier attempts drawn, the data has %d" % (int(re.search(r'data-old="(\d+)"', dom).group(1)), len(old)))
rows_of = re.search(r'<div[^>]*id="table"[^>]*data-rows="(\d+)"', dom)
if not rows_of or int(rows_of.group(1)) != len(data["trials"]):
    fail("the table does not hold all %d trials" % len(data["trials"]))
curves_svg = re.search(r'<div[^>]*id="curves".*?</svg>', dom, re.S).group(0)
n_rungs = len(re.findall(r'class="rung"', curves_svg))
if n_rungs != len(data["rungs"]):
    fail("%d rung lines for rungs %s" % (n_rungs, data["rungs"]))
status_of = {t[0]: status_names[t[1]] for t in data["trials"]}
early = [c for c in with_curve if status_of[c[0]] in ("STOPPED", "ERROR")]
n_ends = len(re.findall(r'class="end"', curves_svg))
if n_ends != len(early):
    fail("%d end dots for %d trials stopped early or failed" % (n_ends, len(early)))
for q in data["params"]:
    if q["domain"] in ("loguniform", "qloguniform", "lograndint", "qlograndint") and \
            (q["name"] + " (log)") not in dom:
        fail("no log axis for %s (%s)" % (q["name"], q["domain"]))
d = Balance(None)
d.feed(dom)
if d.title != p.title:
    fail("the page's title became %r (was %r)" % (d.title, p.title))
ms = re.search(r'data-load-ms="(\d+)"', body)
print("drawn %s, rung lines %d, end dots %d, drawn in %s ms, loaded in %s ms" % (
    expect, n_rungs, len(early), re.search(r'data-render-ms="(\d+)"', body).group(1),
    ms.group(1) if ms else "?"))
EOF

# check DIR [REPORT]: the Python checks, and xmllint's.
check() {
    local dir=$1 page=${2:-$1/report.html}
    "$tune" best "$dir" >"$dir/best.json" || fail "tune best $dir"
    if [ -n "$py" ]; then
        "$py" "$tmp/check.py" "$page" "$dir" || exit 1
        ok "$page is well-formed and holds $dir's data"
    fi
    if [ -n "$xmllint" ]; then
        "$xmllint" --html --noout "$page" 2>"$tmp/xmllint.log" || fail "xmllint: $(cat "$tmp/xmllint.log")"
        [ -s "$tmp/xmllint.log" ] && fail "xmllint: $(cat "$tmp/xmllint.log")"
        ok "xmllint --html accepts $page"
    fi
}

# ---- 1. a sweep whose strings hold HTML and script -------------------------------
cat >"$tmp/esc.json" <<'EOF'
{
  "name": "report-esc",
  "metric": "val_accuracy",
  "mode": "max",
  "num_samples": 60,
  "seed": 3,
  "max_concurrent_trials": 2,
  "param_space": {
    "lr": {"loguniform": [1e-5, 1e-1]},
    "batch_size": {"choice": [16, 32, 64]},
    "opt": {"choice": ["adam", "</script><script>document.title='pwned'</script>",
                       "a&b \"q\" <i>x</i>"]},
    "x<y>&": {"uniform": [0, 1]},
    "sched": {"warm": {"randint": [0, 5]}},
    "const": 7
  },
  "scheduler": {"type": "asha", "max_t": 9, "grace_period": 1, "reduction_factor": 3},
  "trainer": {"type": "synthetic", "iterations": 9, "fail_prob": 0.03},
  "max_failures": 0
}
EOF
esc=$tmp/esc
"$tune" run "$tmp/esc.json" --storage "$esc" >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
[ -f "$esc/report.html" ] || fail "tune run wrote no report.html (exit $rc): $(cat "$tmp/run.err")"
grep -q "$esc/report.html" "$tmp/run.out" || fail "tune run does not name the report: $(cat "$tmp/run.out")"
n_err=$(grep -c ',ERROR,' "$esc/results.csv")
[ "$n_err" -gt 0 ] || fail "the sweep was meant to have ERROR trials"
[ $rc -eq 1 ] || fail "tune run exited $rc with $n_err ERROR trials (expected 1)"
ok "tune run wrote $esc/report.html"
"$tune" report "$esc" -o "$tmp/again.html" || fail "tune report $esc -o again.html"
cmp -s "$esc/report.html" "$tmp/again.html" || fail "the same store gave two different reports"
"$tune" report "$esc" || fail "tune report $esc"
cmp -s "$esc/report.html" "$tmp/again.html" || fail "tune report DIR did not write DIR/report.html"
ok "tune report gives the same page again, by default into DIR/report.html"
check "$esc"

# The style and the script are store/report/report.css and report.js, byte for
# byte, pasted in by the build's embed tool, which refuses a file that would end
# its element early.
if [ -n "$py" ]; then
    "$py" - "$esc/report.html" "$2/store/report/report.css" "$2/store/report/report.js" <<'EOF' ||
import sys
page, css, js = (open(p, 'rb').read() for p in sys.argv[1:4])
assert b'<style>\n' + css + b'</style>\n' in page, 'the <style> is not report.css'
assert b'<script>\n' + js + b'</script>\n' in page, 'the <script> is not report.js'
EOF
        fail "the page does not inline store/report/report.css and report.js as they are"
    ok "the page inlines store/report/report.css and report.js as they are"
fi
embed=$3/store/tune_embed
if [ -x "$embed" ]; then
    printf 'var a = 1;\nvar b = "</script>";\n' >"$tmp/bad.js"
    "$embed" "$tmp/bad.h" "bad_js=$tmp/bad.js" 2>"$tmp/embed.err"
    [ $? -eq 1 ] || fail "the embed tool took a script holding </script>"
    grep -q "bad.js:2: \"</\" would end the inline element" "$tmp/embed.err" ||
        fail "unexpected message: $(cat "$tmp/embed.err")"
    [ ! -e "$tmp/bad.h" ] || fail "the embed tool left a header behind after refusing its input"
    ok "the embed tool refuses an asset holding \"</\", at its line"
fi

if [ -n "$chrome" ]; then
    render --dump-dom "$esc/report.html" >"$tmp/esc.dom" || fail "chromium --dump-dom: $(tail -5 "$tmp/chrome.log")"
    grep -q '<title>report-esc - tune report</title>' "$tmp/esc.dom" ||
        fail "the rendered page's title is not 'report-esc - tune report'"
    grep -q '&lt;/script&gt;&lt;script&gt;document.title' "$tmp/esc.dom" ||
        fail "the parameter value holding a script is not shown as text"
    if [ -n "$py" ]; then
        "$py" "$tmp/check.py" "$esc/report.html" "$esc" --dom "$tmp/esc.dom" || exit 1
    else
        grep -q 'data-report="ready"' "$tmp/esc.dom" || fail "the report's script did not finish"
        grep -q 'data-error=' "$tmp/esc.dom" && fail "a plot failed to draw"
    fi
    ok "chromium draws every plot of $esc/report.html"
    render --screenshot="$tmp/esc.png" "$esc/report.html" >/dev/null ||
        fail "chromium --screenshot: $(tail -5 "$tmp/chrome.log")"
    size=$(stat -c %s "$tmp/esc.png" 2>/dev/null || echo 0)
    [ "$size" -gt 20000 ] || fail "the screenshot is $size bytes: nothing drawn?"
    ok "chromium --screenshot gives a $size-byte PNG"
fi

# window.tuneReport(D) redraws the page in place with new data: a page that
# calls it with the first 10 trials, then with all of them again, then sorts
# the table by a click and redraws (the sort is kept, one listener acts, one
# tooltip element exists). A live page calls it on every poll.
if [ -n "$chrome" ] && [ -n "$py" ]; then
    "$py" - "$esc/report.html" "$tmp/redraw.html" <<'EOF' || fail "could not write the redraw page"
import sys
page = open(sys.argv[1], encoding="utf-8").read()
probe = """<script>
(function () {
  var D = JSON.parse(document.getElementById('tune-data').textContent);
  var D2 = JSON.parse(JSON.stringify(D)), keep = {}, r = [];
  function drawn(id) { return document.getElementById(id).getAttribute('data-drawn'); }
  D2.trials = D2.trials.slice(0, 10);
  D2.trials.forEach(function (t) { keep[t[0]] = 1; });
  D2.curves = D2.curves.filter(function (c) { return keep[c[0]]; });
  D2.series = D2.series.filter(function (c) { return keep[c[0]]; });
  window.tuneReport(D2);
  r.push('rows10=' + document.getElementById('table').getAttribute('data-rows'));
  r.push('curves10=' + drawn('curves') + '/' + D2.curves.length);
  window.tuneReport(D);
  r.push('rows=' + document.getElementById('table').getAttribute('data-rows') + '/' + D.trials.length);
  r.push('svgs=' + document.querySelectorAll('#curves svg').length);
  document.querySelector('#table th[data-col="0"]').click();
  r.push('click=' + document.querySelector('#table th[data-col="0"]').className);
  window.tuneReport(D);
  r.push('kept=' + document.querySelector('#table th[data-col="0"]').className);
  r.push('tips=' + document.querySelectorAll('#tip').length);
  r.push('draws=' + document.body.getAttribute('data-draws'));
  document.body.setAttribute('data-redraw', r.join(' '));
})();
</script>
</body>"""
assert page.count("</body>") == 1
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("</body>", probe))
EOF
    render --dump-dom "$tmp/redraw.html" >"$tmp/redraw.dom" || fail "chromium --dump-dom (redraw)"
    got=$(grep -o 'data-redraw="[^"]*"' "$tmp/redraw.dom")
    want="data-redraw=\"rows10=10 curves10=\([0-9]*\)/\1 rows=\([0-9]*\)/\2 svgs=1 click=asc kept=asc tips=1 draws=4\""
    echo "$got" | grep -qx "$want" || fail "tuneReport(D) redraw: $got (expected $want)"
    grep -q 'data-error=' "$tmp/redraw.dom" && fail "a part failed on redraw"
    ok "tuneReport(D) redraws every part in place: $got"
fi

# ---- 1b. the analysis: importance on a known function, every metric, earlier attempts ----
# f = 10 x + y with z unused, computed by awk through the command trainer: the
# importance bars must put x first, then y, and give z almost nothing.
if [ -n "$chrome" ] && [ -n "$py" ]; then
    cat >"$tmp/known.json" <<'EOF'
{
  "name": "report-known",
  "metric": "f",
  "mode": "max",
  "num_samples": 120,
  "seed": 7,
  "max_concurrent_trials": 2,
  "param_space": {"x": {"uniform": [0, 1]}, "y": {"uniform": [0, 1]}, "z": {"uniform": [0, 1]}},
  "trainer": {"type": "command",
              "argv": ["awk", "BEGIN {{ printf(\"tune-report {{\\\"f\\\": %.9f}}\\n\", 10 * ARGV[1] + ARGV[2]) }}",
                       "{x}", "{y}", "{z}"]}
}
EOF
    "$tune" run "$tmp/known.json" --storage "$tmp/known" --quiet >/dev/null 2>"$tmp/known.err" ||
        fail "the known-function sweep failed: $(tail -3 "$tmp/known.err")"
    check "$tmp/known"
    render --dump-dom "$tmp/known/report.html" >"$tmp/known.dom" || fail "chromium --dump-dom"
    "$py" "$tmp/check.py" "$tmp/known/report.html" "$tmp/known" --dom "$tmp/known.dom" || exit 1
    order=$(grep -o 'id="importance"[^>]*data-order="[^"]*"' "$tmp/known.dom" | sed 's/.*data-order="//; s/"$//')
    # The main effects in order x, y, z (a pair's bar may fall between y and z: the
    # forest sees y's small effect as partly an interaction with x).
    mains=$(echo "$order" | tr '|' '\n' | grep -v ' × ' | tr '\n' '|')
    case "$order" in
    "x|"*) ;;
    *) fail "importance bars for f = 10x + y are in the order '$order' (expected x first)" ;;
    esac
    [ "$mains" = "x|y|z|" ] || fail "importance bars for f = 10x + y: main effects in the order '$mains'"
    "$py" - "$tmp/known/report.html" <<'EOF' || fail "importance of f = 10x + y"
import json, re, sys
t = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'id="tune-data">(.*?)</script>', t, re.S).group(1))
imp = d["importance"]
assert imp["method"] == "fANOVA" and imp["from"] == "TERMINATED", imp
e = imp["by_metric"][0]
x, y, z = e["params"]
assert e["metric"] == "f" and e["n_trials"] == 120 and e["n_trees"] == 64, e
# Closed form: 100/101, 1/101, 0.
assert x > 0.95 and 0.001 < y < 0.03 and z < 0.005 and y > 4 * z, (x, y, z)
assert all(p[2] < 0.02 for p in e["pairs"]), e["pairs"]
print("importance of f = 10x + y over 120 trials: x %.4f, y %.4f, z %.5f" % (x, y, z))
EOF
    grep -q 'fANOVA (Hutter et al. 2014' "$tmp/known.dom" || fail "the importance plot does not name its method"
    ok "importance bars on f = 10x + y: $order"

    # An interaction: f = x + y + 12 (x - 1/2)(y - 1/2), whose variance is 6/7
    # the x-y interaction's (1/14 each main effect): the pair's bar comes first.
    sed -e 's/report-known/report-interaction/' \
        -e 's/10 \* ARGV\[1\] + ARGV\[2\]/ARGV[1] + ARGV[2] + 12 * (ARGV[1] - 0.5) * (ARGV[2] - 0.5)/' \
        "$tmp/known.json" >"$tmp/inter.json"
    grep -q '12 \* (ARGV' "$tmp/inter.json" || fail "could not write the interaction sweep"
    "$tune" run "$tmp/inter.json" --storage "$tmp/inter" --quiet >/dev/null 2>"$tmp/inter.err" ||
        fail "the interaction sweep failed: $(tail -3 "$tmp/inter.err")"
    check "$tmp/inter" >/dev/null
    render --dump-dom "$tmp/inter/report.html" >"$tmp/inter.dom" || fail "chromium --dump-dom"
    "$py" "$tmp/check.py" "$tmp/inter/report.html" "$tmp/inter" --dom "$tmp/inter.dom" >/dev/null || exit 1
    order=$(grep -o 'id="importance"[^>]*data-order="[^"]*"' "$tmp/inter.dom" | sed 's/.*data-order="//; s/"$//')
    case "$order" in
    "x × y|"[xy]"|"[xy]"|"*) ;;
    *) fail "importance bars for an x-y interaction are in the order '$order' (expected x × y, then x and y)" ;;
    esac
    ok "importance bars on f = x + y + 12 (x - 1/2)(y - 1/2): $order"

    # Two metrics, retried attempts (from checkpoints), FIFO: the metric switch,
    # its direction, log y, the history's best values, the contour's selects,
    # and earlier attempts drawn faded.
    cat >"$tmp/multi.json" <<'EOF'
{
  "name": "report-multi",
  "metric": "val_accuracy",
  "mode": "max",
  "num_samples": 30,
  "seed": 11,
  "max_concurrent_trials": 2,
  "max_failures": 6,
  "checkpoint_frequency": 2,
  "param_space": {"lr": {"loguniform": [1e-5, 1e-1]}, "batch_size": {"choice": [16, 32, 64]},
                  "wd": {"uniform": [0, 0.3]}},
  "search": {"algorithm": "tpe", "n_startup_trials": 5},
  "trainer": {"type": "synthetic", "iterations": 8, "report_loss": true, "fail_prob": 0.05}
}
EOF
    "$tune" run "$tmp/multi.json" --storage "$tmp/multi" --quiet >/dev/null 2>&1
    [ -f "$tmp/multi/report.html" ] || fail "no report for the two-metric sweep"
    check "$tmp/multi"
    grep -q '<th>searcher</th><td id="searcher">tpe: n_startup_trials 5, n_ei_candidates 24' "$tmp/multi/report.html" ||
        fail "the summary does not name the searcher with its options"
    grep -q '<th>seed</th><td id="seed">11</td>' "$tmp/multi/report.html" || fail "the summary does not give the seed"
    ok "the summary names the searcher with its options and the seed"
    "$py" - "$tmp/multi/report.html" "$tmp/probe.html" <<'EOF' || fail "could not write the probe page"
import sys
page = open(sys.argv[1], encoding="utf-8").read()
probe = """<script>
(function () {
  var r = [];
  function el(id) { return document.getElementById(id); }
  function change(id, v) {
    var s = el(id);
    s.value = v;
    s.dispatchEvent(new Event('change', {bubbles: true}));
  }
  function label(id) {
    var t = el(id).querySelectorAll('text.lb');
    return t.length ? t[t.length - 1].textContent : '';
  }
  r.push('hist=' + el('history').getAttribute('data-drawn'));
  r.push('old=' + el('curves').getAttribute('data-old'));
  change('metric', 'val_loss');
  r.push('metric=' + el('metric').value + ',' + el('mode').value + ',' + label('history'));
  r.push('curve=' + label('curves'));
  r.push('imp=' + (el('importance').getAttribute('data-order') || '').split('|')[0]);
  el('logy').click();
  r.push('logy=' + label('curves'));
  change('hval', 'best');
  r.push('best=' + label('history'));
  change('xattr', 'time_total_s');
  r.push('x=' + el('curves').getAttribute('data-x'));
  change('cx', '1');
  change('cy', '2');
  var svg = el('contour').querySelector('svg');
  r.push('contour=' + el('cx').value + el('cy').value + ',' + el('contour').getAttribute('data-drawn'));
  r.push('errors=' + document.querySelectorAll('[data-error]').length);
  document.body.setAttribute('data-probe', r.join(';'));
})();
</script>
</body>"""
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("</body>", probe))
EOF
    render --dump-dom "$tmp/probe.html" >"$tmp/probe.dom" || fail "chromium --dump-dom (probe)"
    got=$(grep -o 'data-probe="[^"]*"' "$tmp/probe.dom")
    "$py" - "$tmp/multi/report.html" "$got" <<'EOF' || fail "the controls: $got"
import json, math, re, sys
t = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'id="tune-data">(.*?)</script>', t, re.S).group(1))
got = dict(kv.split("=", 1) for kv in sys.argv[2][len('data-probe="'):-1].split(";"))
names = [s[0] for s in d["statuses"]]
fin = lambda v: v is not None and math.isfinite(v)
hist = sum(1 for r in d["trials"] if names[r[1]] != "ERROR" and fin(r[5][0]))
last = {}
for s in d["series"]:
    last[s[0]] = max(last.get(s[0], 0), s[1])
old = sum(1 for s in d["series"] if s[1] < last[s[0]] and s[4][0] and any(fin(v) for v in s[4][0]))
assert old > 0, "the sweep was meant to retry some trials from checkpoints"
n_loss = sum(1 for r in d["trials"] if fin(r[5][1]))
want = {"hist": str(hist), "old": str(old),
        "metric": "val_loss,min,last val_loss", "curve": "val_loss", "logy": "val_loss (log)",
        "best": "best val_loss (log)", "x": "time_total_s", "contour": "12,%d" % n_loss,
        "errors": "0"}
for k, v in want.items():
    if got.get(k) != v:
        sys.exit("%s: %r, expected %r" % (k, got.get(k), v))
if got["imp"] not in ("lr", "wd", "batch_size"):
    sys.exit("importance for val_loss: first bar %r" % got["imp"])
print("controls: %s" % sys.argv[2])
EOF
    ok "metric switch, direction, log y, best values, time attribute and contour selects redraw; earlier attempts faded"
fi

# ---- 1c. several objectives: the Pareto front and its hypervolume ---------------
# Each trial k reports acc (max) and lat (min) from a table; the front, worked
# out by hand, is k = 0, 1, 2, 3, 4, 7 (1 and 2 are duplicates; 5, 6 and 10 are
# dominated; 8 lacks lat; 9 ends in ERROR with the best values of all). The
# reference point is each objective's worst finite value among the finished
# trials moved a tenth of their range: acc 0.60 - 0.039 = 0.561 (range 0.60 to
# 0.99, k = 8 included), lat 80 + 7.5 = 87.5. Hypervolume of the front, strips
# in acc order: 0.389 x 7.5 + 0.339 x 40 + 0.289 x 20 + 0.239 x 10 + 0.139 x 5
# = 25.3425. A third objective (mem, min) gives parallel coordinates whose
# thick lines are the front of the three, computed here by brute force.
if [ -n "$py" ]; then
    cat >"$tmp/moprog.sh" <<'SH'
#!/bin/sh
case "$1" in
    0) a=0.80 l=10 ;; 1) a=0.85 l=20 ;; 2) a=0.85 l=20 ;; 3) a=0.90 l=40 ;;
    4) a=0.70 l=5 ;; 5) a=0.90 l=50 ;; 6) a=0.75 l=12 ;; 7) a=0.95 l=80 ;;
    8) echo 'tune-report {"acc": 0.99, "mem": 1}'; exit 0 ;;
    9) echo 'tune-report {"acc": 1.00, "lat": 1, "mem": 0}'; exit 1 ;;
    *) a=0.60 l=5 ;;
esac
echo "tune-report {\"acc\": $a, \"lat\": $l, \"mem\": $(( ($1 * 7) % 5 ))}"
SH
    chmod +x "$tmp/moprog.sh"
    for n in 2 3; do
        mm='["acc", "lat"], "mode": ["max", "min"]'
        [ $n = 3 ] && mm='["acc", "lat", "mem"], "mode": ["max", "min", "min"]'
        cat >"$tmp/mo$n.json" <<JSON
{"name": "report-mo$n", "metric": $mm, "num_samples": 1, "seed": 2,
 "max_concurrent_trials": 2, "max_failures": 0,
 "param_space": {"k": {"grid_search": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}},
 "trainer": {"type": "command", "argv": ["$tmp/moprog.sh", "{k}"]}}
JSON
        "$tune" run "$tmp/mo$n.json" --storage "$tmp/mo$n" --quiet >/dev/null 2>&1
        [ -f "$tmp/mo$n/report.html" ] || fail "no report for the $n-objective sweep"
        # check.py compares the page's best trial with `tune best`'s: the first objective's.
        "$tune" best "$tmp/mo$n" --metric acc >"$tmp/mo$n/best.json" || fail "tune best --metric acc"
        dom=
        if [ -n "$chrome" ]; then
            render --dump-dom "$tmp/mo$n/report.html" >"$tmp/mo$n.dom" || fail "chromium --dump-dom"
            "$py" "$tmp/check.py" "$tmp/mo$n/report.html" "$tmp/mo$n" --dom "$tmp/mo$n.dom" >/dev/null || exit 1
            dom=$tmp/mo$n.dom
        else
            "$py" "$tmp/check.py" "$tmp/mo$n/report.html" "$tmp/mo$n" >/dev/null || exit 1
        fi
        "$py" - "$tmp/mo$n/report.html" "$n" "$dom" <<'PY' || fail "the Pareto front of the $n-objective report"
import json, re, sys
page, n, dom = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = open(page, encoding="utf-8").read()
d = json.loads(re.search(r'id="tune-data">(.*?)</script>', t, re.S).group(1))
P = d["pareto"]
k_of = {r[0]: r[4][0] for r in d["trials"]}
assert P["objectives"] == ["acc", "lat", "mem"][:n] and P["modes"] == ["max", "min", "min"][:n], P
assert sorted(k_of[i] for i in P["trials"]) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10], P["trials"]
if n == 2:
    want = [0, 1, 2, 3, 4, 7]
    assert all(abs(a - b) < 1e-12 for a, b in zip(P["reference"], [0.561, 87.5])), P["reference"]
    assert abs(P["hypervolume"][-1] - 25.3425) < 1e-9, P["hypervolume"]
else:
    # Brute force: finished trials with every objective, dominance in each direction.
    sg = [-1, 1, 1]
    pts = {i: [s * v for s, v in zip(sg, vals)] for i, vals in zip(P["trials"], P["values"])
           if all(v is not None for v in vals)}
    dom_ = lambda a, b: all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))
    want = sorted(k_of[i] for i, p in pts.items() if not any(dom_(q, p) for q in pts.values()))
assert sorted(k_of[i] for i in P["front"]) == want, (P["front"], want)
hv = P["hypervolume"]
assert P["hypervolume_complete"] and all(v is not None for v in hv), hv
assert all(b >= a for a, b in zip(hv, hv[1:])) and hv[-1] > 0, hv
assert re.search(r"<th>objectives</th><td><code>acc</code> \(max\), <code>lat</code> \(min\)", t)
out = "front k = %s, hypervolume %s" % (want, [round(v, 4) for v in hv])
if dom:
    html = open(dom, encoding="utf-8").read()
    part = re.search(r'<div[^>]*id="pareto".*?</svg>', html, re.S).group(0)
    head = re.search(r'<div[^>]*id="pareto"[^>]*>', part).group(0)
    marks = re.findall(r'<(?:circle|path)[^>]*class="(?:front|pc front)"[^>]*>', part)
    got = sorted(k_of[int(re.search(r'data-trial="(\d+)"', m).group(1))] for m in marks)
    assert got == want, ("front marks", got, want)
    assert 'data-front="%d"' % len(want) in head, head
    both = sum(1 for v in P["values"] if all(x is not None for x in v))
    assert 'data-drawn="%d"' % both in head, (head, both)
    if n == 2:
        assert len(re.findall(r'class="frontline" d="M', part)) == 1, "the front is not joined"
    hvp = re.search(r'<div[^>]*id="hypervolume".*?</svg>.*?</p>', html, re.S).group(0)
    path = re.search(r'class="hvline" d="([^"]*)"', hvp).group(1)
    # "M x y" then "H x V y" per step: the y of each step, in pixels (down is smaller).
    ys = [float(path[1:].split()[1].split("H")[0])] + \
        [float(v.split("H")[0]) for v in path.split("V")[1:]]
    assert len(ys) == len(hv) and all(b <= a for a, b in zip(ys, ys[1:])), ("the line goes down", ys)
    assert n == 3 or "reference point acc = 0.561, lat = 87.5" in hvp, "the reference point is not named"
    out += "; drawn: %d front marks, a hypervolume line of %d steps" % (len(got), len(ys))
print(out)
PY
        ok "$n objectives: the report's Pareto front and hypervolume"
    done
fi

# Mode "min", and log domains that are quantized or integer.
"$tune" run "$2/configs/examples/minimize_loss.json" --storage "$tmp/min" --quiet >/dev/null 2>&1
[ -f "$tmp/min/report.html" ] || fail "no report for configs/examples/minimize_loss.json"
check "$tmp/min"
if [ -n "$chrome" ] && [ -n "$py" ]; then
    render --dump-dom "$tmp/min/report.html" >"$tmp/min.dom" || fail "chromium --dump-dom"
    "$py" "$tmp/check.py" "$tmp/min/report.html" "$tmp/min" --dom "$tmp/min.dom" || exit 1
    ok "chromium draws every plot of a sweep with mode min"
fi

# ---- 3. 1,000 trials -----------------------------------------------------------
cat >"$tmp/big.json" <<'EOF'
{
  "name": "report-1000",
  "metric": "val_accuracy",
  "mode": "max",
  "num_samples": 1000,
  "seed": 5,
  "max_concurrent_trials": 2,
  "param_space": {
    "lr": {"loguniform": [1e-6, 1e-1]},
    "batch_size": {"choice": [16, 32, 64]},
    "warmup_steps": {"randint": [0, 11]},
    "weight_decay": {"uniform": [0.0, 0.3]}
  },
  "scheduler": {"type": "asha", "max_t": 10, "grace_period": 1, "reduction_factor": 4},
  "trainer": {"type": "synthetic", "iterations": 10}
}
EOF
big=$tmp/big
"$tune" run "$tmp/big.json" --storage "$big" --quiet || fail "the 1,000-trial sweep failed"
TIMEFORMAT=%R
t_report=$( { time "$tune" report "$big" >/dev/null; } 2>&1) || fail "tune report $big"
size=$(stat -c %s "$big/report.html")
[ "$size" -le 5000000 ] || fail "the 1,000-trial report is $size bytes (limit 5 MB)"
ok "1,000 trials: report.html is $size bytes, written in ${t_report} s"
check "$big"
if [ -n "$chrome" ]; then
    # The page times itself: navigation start to everything drawn, and to the
    # load event. Chromium's own start-up is timed on an empty page. Other
    # processes slow a wall clock down, so the best of three loads counts, and
    # on a machine with more than two runnable processes per core it is shown,
    # not asserted.
    echo '<!DOCTYPE html><title>x</title>' >"$tmp/blank.html"
    t_blank=$( { time render --dump-dom "$tmp/blank.html" >/dev/null; } 2>&1)
    best_load=
    for _ in 1 2 3; do
        t_page=$( { time render --dump-dom "$big/report.html" >"$tmp/big.dom"; } 2>&1)
        load=$(grep -o 'data-load-ms="[0-9]*"' "$tmp/big.dom" | grep -o '[0-9]*')
        drawn=$(grep -o 'data-render-ms="[0-9]*"' "$tmp/big.dom" | grep -o '[0-9]*')
        [ -n "$load" ] || fail "the 1,000-trial page did not load"
        echo "1,000 trials: drawn in $drawn ms, loaded in $load ms;" \
            "chromium --dump-dom took ${t_page} s (${t_blank} s for an empty page)"
        if [ -z "$best_load" ] || [ "$load" -lt "$best_load" ]; then best_load=$load; fi
        [ "$best_load" -lt 2000 ] && break
    done
    busy=$(awk -v n="$(nproc)" '{ print ($1 / n > 2) }' /proc/loadavg)
    if [ "$best_load" -ge 2000 ] && [ "$busy" = 1 ]; then
        echo "WARNING: the 1,000-trial page took $best_load ms to load, on a busy machine" \
            "(load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores): not asserted"
    else
        [ "$best_load" -lt 2000 ] || fail "the 1,000-trial page took $best_load ms to load (limit 2 s)"
        ok "1,000 trials: the page loads in $best_load ms"
    fi
    if [ -n "$py" ]; then
        "$py" "$tmp/check.py" "$big/report.html" "$big" --dom "$tmp/big.dom" || exit 1
        ok "chromium draws every plot of the 1,000-trial report"
    fi
fi

# ---- 4. errors -------------------------------------------------------------------
"$tune" report >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "tune report without DIR must exit 2"
"$tune" report "$esc" -x >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "tune report with an unknown option must exit 2"
mkdir "$tmp/empty"
"$tune" report "$tmp/empty" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "tune report on a folder without an experiment must exit 2"
grep -q "empty: no experiment here" "$tmp/err" || fail "unexpected message: $(cat "$tmp/err")"
"$tune" report "$esc" -o "$tmp/no/such/dir/r.html" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "tune report into a missing folder must exit 1"
grep -q "r.html.tmp" "$tmp/err" || fail "the message does not name the file: $(cat "$tmp/err")"
ok "tune report: usage and file errors"

# A report that cannot be written does not change the run's outcome.
sed -e 's/"num_samples": 1000/"num_samples": 20/' -e 's/report-1000/report-blocked/' \
    "$tmp/big.json" >"$tmp/small.json"
mkdir -p "$tmp/blocked/report.html"
"$tune" run "$tmp/small.json" --storage "$tmp/blocked" >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
[ $rc -eq 0 ] || fail "a run whose report cannot be written exited $rc: $(cat "$tmp/run.err")"
grep -q "warning: no report" "$tmp/run.err" || fail "no warning: $(cat "$tmp/run.err")"
[ "$(wc -l <"$tmp/blocked/results.csv")" -eq 21 ] || fail "results.csv is incomplete"
ok "a report that cannot be written warns; the run exits 0 with its results"

# An interrupted run still gets its report, with the trials that did not finish.
sed -e 's/"num_samples": 1000/"num_samples": 40/' -e 's/report-1000/report-stop/' \
    -e 's/"iterations": 10}/"iterations": 10, "sleep_s": 0.05}/' "$tmp/big.json" >"$tmp/slow.json"
"$tune" run "$tmp/slow.json" --storage "$tmp/stop" --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 100); do
    [ -f "$tmp/stop/experiment.db" ] && break
    sleep 0.05
done
sleep 0.5
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 1 ] || fail "an interrupted run must exit 1, got $rc"
[ -f "$tmp/stop/report.html" ] || fail "an interrupted run wrote no report"
grep -q ',PENDING,' "$tmp/stop/results.csv" || fail "the interrupted run had no trial left to run"
check "$tmp/stop"
ok "an interrupted run writes its report"

[ $checks -gt 0 ] || exit 77
echo "test_report: $checks checks passed"
