"""dashboard_client.py - the clients tests/cli/test_dashboard.sh drives `tune dashboard` with.

  dashboard_client.py page URL CHROMIUM PROFILE [PNG]
      Opens URL in headless Chromium (driven over --remote-debugging-pipe, the
      DevTools protocol, so that one page is read at several moments) while a
      sweep runs: the page must redraw in place as trials arrive (the DOM of
      two moments differs, more rows, a marker set in the first survives, one
      navigation only), a new trial in /api/trials must be on the page within
      2 s, and no part of the report may fail. PNG: a screenshot at the end.
  dashboard_client.py csv URL DIR
      /api/trials and /api/trials/<id> against DIR/results.csv and
      progress.csv, by trial id and column name.
  dashboard_client.py bad URL
      Malformed and hostile requests get their status codes; the server lives.
  dashboard_client.py slow URL TIMEOUT_S
      Clients that stop sending are cut after the timeout; others are served meanwhile.
  dashboard_client.py load URL PID
      A bounded loopback load (threads x requests, a deadline), more connections
      than the limit, and the server's memory afterwards.

Prints "ok: ..." lines; exits 1 with "FAIL: ..." at the first failure.
"""
import base64, csv, json, math, os, socket, subprocess, sys, threading, time
import urllib.error, urllib.request


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def ok(msg):
    print("ok: " + msg)
    sys.stdout.flush()


def get(url, headers=None, timeout=10):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get_json(url):
    code, _, body = get(url)
    if code != 200:
        fail("%s: HTTP %d: %s" % (url, code, body[:200]))
    return json.loads(body)


# ---- the page in Chromium ----------------------------------------------------

class Chrome:
    """Headless Chromium over the DevTools protocol on a pipe (fds 3 and 4)."""

    def __init__(self, binary, profile):
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def fds():
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        env = dict(os.environ, HOME=profile)
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--user-data-dir=" + profile + "/chrome", "--remote-debugging-pipe",
             "--window-size=1280,2000", "--hide-scrollbars", "about:blank"],
            pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL,
            stderr=open(profile + "/chrome.log", "w"), env=env)
        os.close(to_r)
        os.close(from_w)
        self.buf, self.id, self.sid = b"", 0, None

    def call(self, method, params=None, timeout=30):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params or {}}
        if self.sid and not method.startswith(("Target.", "Browser.")):
            msg["sessionId"] = self.sid
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            while b"\0" not in self.buf:
                if time.time() > deadline:
                    fail("chromium: no answer to " + method)
                chunk = os.read(self.from_r, 1 << 20)
                if not chunk:
                    fail("chromium exited (see chrome.log)")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            d = json.loads(raw)
            if d.get("id") == self.id:
                if "error" in d:
                    fail("chromium: %s: %s" % (method, d["error"]))
                return d["result"]

    def open(self, url):
        t = self.call("Target.createTarget", {"url": url})
        self.sid = self.call("Target.attachToTarget",
                             {"targetId": t["targetId"], "flatten": True})["sessionId"]

    def js(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        if "exceptionDetails" in r:
            fail("page script: %s: %s" % (expr, r["exceptionDetails"].get("text")))
        return r["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except SystemExit:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def wait_for(what, cond, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    fail("timed out after %g s waiting for %s" % (timeout, what))


STATE = """(function () {
  var data = document.getElementById('tune-data');
  if (!data || !document.body || !document.getElementById('tune-live')) return {ready: null};
  var live = document.getElementById('tune-live'), tbl = document.getElementById('table');
  return {ready: document.body.getAttribute('data-report'),
          updates: +(live && live.getAttribute('data-updates') || 0),
          trials: +(live && live.getAttribute('data-trials') || -1),
          badge: live ? live.textContent : null, down: live ? live.className : null,
          rows: tbl ? +(tbl.getAttribute('data-rows') || 0) : -1,
          embedded: JSON.parse(data.textContent).trials.length,
          summary: (document.getElementById('summary') || {}).textContent,
          errors: document.querySelectorAll('[data-error]').length,
          navigations: performance.getEntriesByType('navigation').length,
          mark: window.__tuneMark || null,
          dom: document.documentElement.outerHTML};
})()"""


def page(url, chrome_bin, profile, png=None):
    c = Chrome(chrome_bin, profile)
    try:
        c.open(url)
        wait_for("the report to draw", lambda: c.js(STATE)["ready"] == "ready", 30)
        s1 = c.js(STATE)
        c.js("window.__tuneMark = 'first'")
        if s1["errors"]:
            fail("a part of the page failed: %s" % s1["dom"][:2000])
        ok("page drawn: %d trials embedded, %d table rows, badge '%s'"
           % (s1["embedded"], s1["rows"], s1["badge"]))
        # New trials arrive: each must be on the page within 2 s of /api/trials listing it.
        lags = []
        n_seen = s1["rows"]
        for _ in range(3):
            n = wait_for("a new trial in /api/trials",
                         lambda: (lambda k: k if k > n_seen else 0)(
                             len(get_json(url + "api/trials")["trials"])), 30)
            t0 = time.time()
            wait_for("trial %d on the page" % n, lambda: c.js(STATE)["rows"] >= n, 5)
            lags.append(time.time() - t0)
            n_seen = n
        if max(lags) > 2.0:
            fail("the page showed new trials %.2f s after the API (over 2 s): %s" % (max(lags), lags))
        ok("new trials on the page %s s after /api/trials listed them (at most 2 s)"
           % ", ".join("%.2f" % x for x in lags))
        s2 = c.js(STATE)
        if s2["mark"] != "first" or s2["navigations"] != 1:
            fail("the page was reloaded (marker %r, %d navigations)" % (s2["mark"], s2["navigations"]))
        if s2["dom"] == s1["dom"] or s2["rows"] <= s1["rows"] or s2["updates"] < 1:
            fail("the DOM did not change in place: rows %d -> %d, updates %d"
                 % (s1["rows"], s2["rows"], s2["updates"]))
        if s2["summary"] == s1["summary"]:
            fail("the summary table was not updated: %r" % s2["summary"])
        if s2["errors"]:
            fail("a part of the page failed on redraw")
        if s2["embedded"] != s1["embedded"]:
            fail("the embedded data changed: the page was rebuilt, not redrawn")
        ok("redrawn in place: rows %d -> %d, %d redraws, one navigation, marker kept, summary "
           "updated, DOM %d -> %d bytes" % (s1["rows"], s2["rows"], s2["updates"],
                                             len(s1["dom"]), len(s2["dom"])))
        if png:
            shot = c.call("Page.captureScreenshot", {"format": "png"})
            open(png, "wb").write(base64.b64decode(shot["data"]))
            ok("screenshot %s" % png)
    finally:
        c.close()


# ---- the JSON against the CSVs ------------------------------------------------

def same_number(text, v):
    """A CSV field against a JSON value: equal doubles (both print round-trip), '' for null."""
    if v is None:
        return text in ("", "nan", "NaN")
    if isinstance(v, bool):
        return text.lower() in (("true", "1") if v else ("false", "0"))
    if isinstance(v, str):
        return text == v
    try:
        f = float(text)
    except ValueError:
        return False
    return f == v or (math.isinf(f) and math.isinf(v) and (f > 0) == (v > 0))


def csv_compare(url, exp_dir):
    doc = get_json(url + "api/trials")
    trials = {t["trial_id"]: t for t in doc["trials"]}
    rows = list(csv.DictReader(open(os.path.join(exp_dir, "results.csv"), newline="")))
    if sorted(int(r["trial_id"]) for r in rows) != sorted(trials):
        fail("results.csv and /api/trials list different trials")
    checked = 0
    for r in rows:
        t = trials[int(r["trial_id"])]
        if r["status"] != t["status"]:
            fail("trial %d: status %s in results.csv, %s in the API" % (t["trial_id"], r["status"], t["status"]))
        if int(r["training_iteration"]) != t["training_iteration"]:
            fail("trial %d: training_iteration differs" % t["trial_id"])
        for name, v in t["config"].items():
            if not same_number(r["config/" + name], v):
                fail("trial %d: config/%s %s vs %r" % (t["trial_id"], name, r["config/" + name], v))
            checked += 1
        for name, v in t["last"].items():
            if name not in r or not same_number(r[name], v):
                fail("trial %d: metric %s %s vs %r" % (t["trial_id"], name, r.get(name), v))
            checked += 1
        if doc["metric"] in t["last"] and t["best"] is None:
            fail("trial %d has the metric but no best report" % t["trial_id"])
    ok("/api/trials matches results.csv: %d trials, %d values" % (len(rows), checked))

    prog = list(csv.DictReader(open(os.path.join(exp_dir, "progress.csv"), newline="")))
    by_trial = {}
    for r in prog:
        by_trial.setdefault(int(r["trial_id"]), []).append(r)
    n = 0
    for tid, t in trials.items():
        one = get_json(url + "api/trials/%d" % tid)
        if {k: v for k, v in one.items() if k != "reports"} != t:
            fail("/api/trials/%d differs from its row in /api/trials" % tid)
        reps = one["reports"]
        # progress.csv holds the last attempt, or every attempt when it has an attempt column.
        if prog and "attempt" not in prog[0]:
            reps = [x for x in reps if x["attempt"] == t["attempt"]]
        want = by_trial.get(tid, [])
        if len(want) != len(reps):
            fail("trial %d: %d reports in progress.csv, %d in the API" % (tid, len(want), len(reps)))
        for r, x in zip(want, reps):
            if int(r["training_iteration"]) != x["training_iteration"] or \
                    not same_number(r["time_total_s"], x["time_total_s"]):
                fail("trial %d: report %s differs" % (tid, r))
            if "attempt" in r and int(r["attempt"]) != x["attempt"]:
                fail("trial %d: attempt differs" % tid)
            for name, v in x["metrics"].items():
                if not same_number(r[name], v):
                    fail("trial %d iteration %s: %s %s vs %r" % (tid, r["training_iteration"], name, r[name], v))
            n += 1
        best = max((x for x in one["reports"] if x["metrics"].get(doc["metric"]) is not None),
                   key=lambda x: x["metrics"][doc["metric"]] * (1 if doc["mode"] == "max" else -1),
                   default=None)
        if best and t["best"]["metrics"][doc["metric"]] != best["metrics"][doc["metric"]]:
            fail("trial %d: best %r is not the best report %r" % (tid, t["best"], best))
    ok("/api/trials/<id> matches progress.csv: %d reports; each best is its best report" % n)


# ---- malformed and hostile requests ---------------------------------------------

def raw(host, port, data, timeout=10):
    """Sends data as is; the status code of the answer (0 when the server just closed)."""
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(data)
        got = b""
        while b"\r\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except (ConnectionResetError, BrokenPipeError):
        return 0, b""
    finally:
        s.close()
    parts = got.split(b" ", 2)
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0), got


def host_port(url):
    hp = url.split("//", 1)[1].rstrip("/")
    host, port = hp.rsplit(":", 1)
    return host.strip("[]"), int(port)


def bad(url):
    host, port = host_port(url)
    h = "Host: %s:%d\r\n" % (host, port)
    cases = [
        ("unknown path", "GET /nope HTTP/1.1\r\n%s\r\n" % h, {404}),
        ("path outside", "GET /../../etc/passwd HTTP/1.1\r\n%s\r\n" % h, {404}),
        ("trial id not a number", "GET /api/trials/abc HTTP/1.1\r\n%s\r\n" % h, {404}),
        ("trial id negative", "GET /api/trials/-1 HTTP/1.1\r\n%s\r\n" % h, {404}),
        ("trial id too long", "GET /api/trials/%s HTTP/1.1\r\n%s\r\n" % ("9" * 40, h), {404}),
        ("no such trial", "GET /api/trials/123456 HTTP/1.1\r\n%s\r\n" % h, {404}),
        ("POST", "POST / HTTP/1.1\r\n%sContent-Length: 5\r\n\r\nhello" % h, {405}),
        ("PUT", "PUT /api/trials HTTP/1.1\r\n%sContent-Length: 0\r\n\r\n" % h, {405}),
        ("DELETE", "DELETE /api/trials/1 HTTP/1.1\r\n%s\r\n" % h, {405}),
        ("huge URL", "GET /%s HTTP/1.1\r\n%s\r\n" % ("a" * 100000, h), {414}),
        ("huge header", "GET / HTTP/1.1\r\n%sX-Big: %s\r\n\r\n" % (h, "b" * 100000), {431, 413}),
        ("no HTTP version", "GET /\r\n\r\n", {400, 0}),
        ("bad version", "GET / HTTP/9.9\r\n%s\r\n" % h, {505, 400}),
        ("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", {400}),
        ("another Host (DNS rebinding)", "GET /api/trials HTTP/1.1\r\nHost: evil.example:%d\r\n\r\n" % port, {403}),
        ("bad percent escape", "GET /api/trials/%%zz HTTP/1.1\r\n%s\r\n" % h, {404, 400}),
    ]
    for name, req, want in cases:
        code, got = raw(host, port, req.encode("latin-1"))
        if code not in want:
            fail("%s: got %d, expected %s: %r" % (name, code, sorted(want), got[:200]))
        ok("%s -> %s" % (name, code or "connection closed"))
    # Binary garbage: libmicrohttpd answers nothing and closes at its timeout (10 s).
    t0 = time.time()
    code, got = raw(host, port, b"\x00\x01\x02 hello\r\n\r\n", timeout=20)
    if code not in (0, 400) or time.time() - t0 > 15:
        fail("garbage: %d after %.1f s: %r" % (code, time.time() - t0, got[:100]))
    ok("binary garbage -> %s after %.1f s" % (code or "connection closed", time.time() - t0))
    code, headers, _ = get(url, {"Host": "localhost:%d" % port})
    if code != 200:
        fail("Host localhost refused: %d" % code)
    code, headers, _ = get(url + "api/report")
    etag = headers.get("ETag")
    code2, _, body = get(url + "api/report", {"If-None-Match": etag or ""})
    if code != 200 or not etag or code2 not in (200, 304) or (code2 == 304 and body):
        fail("conditional GET: %d %r then %d" % (code, etag, code2))
    ok("ETag %s; If-None-Match -> %d" % (etag, code2))
    code, headers, _ = get(url + "api/trials", {"Host": "localhost:%d" % port})
    req = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(req, timeout=10) as r:
        if r.status != 200 or r.read():
            fail("HEAD /: %d with a body" % r.status)
    ok("HEAD / -> 200 without a body; the server still answers")


def slow(url, timeout_s):
    host, port = host_port(url)
    socks = []
    for i in range(5):
        s = socket.create_connection((host, port), timeout=timeout_s + 10)
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and then nothing
        socks.append(s)
    t0 = time.time()
    code, _, _ = get(url + "api/trials")
    if code != 200:
        fail("with slow clients connected, GET /api/trials -> %d" % code)
    for s in socks:
        try:
            data = s.recv(100)  # blocks until the server gives up on it
        except ConnectionResetError:
            data = b""
        if data:
            fail("a stalled request got an answer: %r" % data[:80])
    took = time.time() - t0
    if took > timeout_s + 5:
        fail("stalled connections were closed only after %.1f s (timeout %d s)" % (took, timeout_s))
    ok("5 stalled requests: others served meanwhile; all cut after %.1f s (timeout %d s)" % (took, timeout_s))


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def load(url, pid):
    host, port = host_port(url)
    paths = ["", "api/report", "api/summary", "api/trials", "api/trials/0", "api/trials/1", "nope"]
    rss0 = rss_kb(pid)
    n_threads, per_thread, deadline = 8, 40, time.time() + 60
    codes, errors = {}, []
    lock = threading.Lock()

    def worker(k):
        for i in range(per_thread):
            if time.time() > deadline:
                return
            p = paths[(k + i) % len(paths)]
            try:
                code, _, _ = get(url + p, timeout=20)
            except Exception as e:  # noqa: BLE001 - any failure is reported
                with lock:
                    errors.append("%s: %s" % (p, e))
                continue
            with lock:
                codes[code] = codes.get(code, 0) + 1

    t0 = time.time()
    th = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    took = time.time() - t0
    total = sum(codes.values())
    if errors or total != n_threads * per_thread or set(codes) - {200, 404}:
        fail("load: %d answers of %d, codes %s, errors %s" % (total, n_threads * per_thread, codes, errors[:3]))
    ok("load: %d requests from %d threads in %.1f s (%.0f/s), codes %s"
       % (total, n_threads, took, total / took, codes))
    # More connections than the limit (64): the extra ones are closed, the server lives.
    socks = []
    for i in range(100):
        try:
            socks.append(socket.create_connection((host, port), timeout=5))
        except OSError:
            break
    time.sleep(0.5)
    for s in socks:
        s.close()
    time.sleep(0.5)
    code, _, _ = get(url + "api/trials")
    if code != 200:
        fail("after 100 idle connections, GET /api/trials -> %d" % code)
    rss1 = rss_kb(pid)
    if rss1 - rss0 > 64 * 1024:
        fail("the server grew from %d kB to %d kB under load" % (rss0, rss1))
    ok("%d idle connections opened and dropped; server answers; RSS %d kB -> %d kB" % (len(socks), rss0, rss1))


def main():
    cmd = sys.argv[1]
    if cmd == "page":
        page(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
    elif cmd == "csv":
        csv_compare(sys.argv[2], sys.argv[3])
    elif cmd == "bad":
        bad(sys.argv[2])
    elif cmd == "slow":
        slow(sys.argv[2], int(sys.argv[3]))
    elif cmd == "load":
        load(sys.argv[2], int(sys.argv[3]))
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
