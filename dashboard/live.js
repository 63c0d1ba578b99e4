/*
 * The live dashboard's script (`tune dashboard`, dashboard/views.c pastes it
 * into the report page): polls GET api/report every data-refresh-ms with the
 * entity tag of the data it shows, and when the server sends newer data
 * redraws the page in place through window.tuneReport(D), the report's one
 * entry point (store/report/report.js), and swaps in the summary table from
 * GET api/summary. The page is never reloaded, so the table's sort and the
 * scroll position stay. The badge (#tune-live) says when the server last
 * answered, or that it cannot be reached (then polls back off to 10 s).
 * For the tests: data-updates counts redraws, data-trials is the number of
 * trials last drawn.
 */
(function () {
'use strict';
var el = document.getElementById('tune-live');
if (!el || !window.fetch || !window.tuneReport) return;
var every = Math.max(100, +el.getAttribute('data-refresh-ms') || 1000);
var etag = el.getAttribute('data-etag');
var updates = 0, failures = 0;
function say(down, text) {
  el.className = down ? 'down' : '';
  el.textContent = text;
}
function summary() {
  return fetch('api/summary', {cache: 'no-store'}).then(function (r) {
    if (!r.ok) return null;
    return r.text().then(function (html) {
      var old = document.getElementById('summary');
      if (old) old.outerHTML = html;
    });
  });
}
function poll() {
  var headers = etag ? {'If-None-Match': '"' + etag + '"'} : {};
  fetch('api/report', {cache: 'no-store', headers: headers}).then(function (r) {
    if (r.status === 304) return null;
    if (!r.ok) throw new Error('HTTP ' + r.status);
    var tag = r.headers.get('ETag');
    return r.json().then(function (D) {
      window.tuneReport(D);
      etag = tag ? tag.replace(/"/g, '') : null;
      updates++;
      el.setAttribute('data-updates', String(updates));
      el.setAttribute('data-trials', String(D.trials.length));
      return summary();
    });
  }).then(function () {
    failures = 0;
    say(false, 'live \u00b7 ' + new Date().toLocaleTimeString());
  }, function (e) {
    failures++;
    say(true, 'not connected (' + (e && e.message ? e.message : e) + ') \u00b7 retrying');
  }).then(function () {
    setTimeout(poll, Math.min(every * (1 + failures), Math.max(every, 10000)));
  });
}
say(false, 'live');
setTimeout(poll, every);
})();
