/*
 * The report's drawing: window.tuneReport(D) draws every part of the page
 * from D, the data document that report_html.c embeds in #tune-data (its
 * fields are described there). It may be called again with new data at any
 * time (a live page polling the store does so): each part is redrawn in its
 * own container, in place, and the event listeners and the tooltip are set
 * up once, so nothing piles up. The static page calls it once, with the
 * embedded document. This entry point and D's existing fields are stable:
 * fields are added, never renamed.
 */
/*
 * D's fields (report_html.c writes them; a field missing from an older or
 * hand-made document turns its part into a note, never an error):
 *   metric, mode ('min'|'max'), best (trial id or -1), statuses [[name, colour]],
 *   rungs [milestones in time_attr units], time_attr, params [{name, type, domain}],
 *   metrics [names, main first], metrics_truncated,
 *   trials [[id, status, iteration, time_total_s, [params], [last metric values],
 *           error, attempt, start_s, end_s]] (start/end from t0, an epoch),
 *   curves [[id, it, value, it, value...]]: the main metric, last attempt,
 *   series [[id, attempt, [iterations], [time_total_s], [[values] or null per metric]]]:
 *           every report of every attempt,
 *   importance {method, trees, seed, from, n_finished, by_metric: [{metric, n_trials,
 *           n_trees, params [share or null], sd [...], pairs [[a, b, share]]} or
 *           {metric, n_trials, error}]},
 *   searcher {name, summary, seed, seed_given}, scheduler {name, summary},
 *   pareto (several objectives only) {objectives [names], modes ['min'|'max'], from,
 *           trials [ids of the finished trials with an objective], values [[last value
 *           of each objective or null]], front [trial ids], reference [one value per
 *           objective, in its own direction], reference_rule, hypervolume [after each of
 *           trials, null past the writer's work cap], hypervolume_complete}.
 */
(function () {
'use strict';
/* The data of the latest tuneReport(D) call, and what is derived from it. */
var D, T, NP, SN, SC, sign, byId, M, bestId, S, lastAttempt;
/* What the user chose: kept across tuneReport() calls while it still applies. */
var ui = {metric: null, modes: {}, logy: false, logx: false, xattr: null, hval: 'last',
          cx: null, cy: null};
/* The direction of a metric other than the main one: the user's, else a guess from its name. */
function modeOf(name) {
  if (ui.modes[name]) return ui.modes[name];
  if (name === D.metric) return D.mode;
  if (/loss|err|mse|mae|rmse|perplexity|regret|time/i.test(name)) return 'min';
  if (/acc|auc|f1|precision|recall|score|reward|return|iou|bleu/i.test(name)) return 'max';
  return D.mode;
}
function load(data) {
  D = data;
  T = D.trials;
  NP = D.params.length;
  SN = D.statuses.map(function (s) { return s[0]; });
  SC = D.statuses.map(function (s) { return s[1]; });
  byId = {};
  T.forEach(function (t) { byId[t[0]] = t; });
  M = Math.max(0, D.metrics.indexOf(ui.metric));
  ui.metric = D.metrics[M];
  sign = modeOf(D.metrics[M]) === 'min' ? -1 : 1;
  /* The best trial by the chosen metric and direction (the store's for the main one). */
  bestId = D.best;
  if (M !== 0 || ui.modes[D.metric]) {
    bestId = -1;
    T.forEach(function (t) {
      if (SN[t[1]] !== 'ERROR' && fin(final(t)) && (bestId < 0 || score(t) > score(byId[bestId])))
        bestId = t[0];
    });
  }
  /* Every attempt's reports; from the main metric's curves when the data has no series. */
  S = D.series || (D.curves || []).map(function (c) {
    var it = [], v = [];
    for (var i = 1; i + 1 < c.length; i += 2) { it.push(c[i]); v.push(c[i + 1]); }
    var t = byId[c[0]];
    return [c[0], t && t[7] ? t[7] : 1, it, null, [v]];
  });
  lastAttempt = {};
  S.forEach(function (s) {
    if (!(lastAttempt[s[0]] >= s[1])) lastAttempt[s[0]] = s[1];
  });
}
/* A trial's last value of the chosen metric. */
function final(t) { return t[5][M]; }
function esc(s) {
  return String(s).replace(/[&<>"']/g, function (c) {
    return '&#' + c.charCodeAt(0) + ';';
  });
}
/* The element `name` with attrs (escaped) around body; self-closing without a body. */
function tag(name, attrs, body) {
  var o = '<' + name;
  for (var k in attrs)
    if (attrs[k] !== undefined) o += ' ' + k + '="' + esc(attrs[k]) + '"';
  return body === undefined ? o + '/>' : o + '>' + body + '<\/' + name + '>';
}
function fmt(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v !== 'number') return String(v);
  if (!isFinite(v)) return v > 0 ? 'inf' : '-inf';
  var a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6))
    return v.toExponential(2).replace(/\.?0+e/, 'e').replace('e+', 'e');
  return String(+v.toPrecision(4));
}
function clip(s, n) {
  s = String(s);
  return s.length > n ? s.slice(0, n - 1) + '\u2026' : s;
}
function fin(v) { return typeof v === 'number' && isFinite(v); }
function r1(v) { return Math.round(v * 10) / 10; }
/* Worse trials first, so that the better ones are drawn on top. */
function score(t) { return t && fin(final(t)) ? sign * final(t) : -Infinity; }
function byScore(a, b) { return score(a) - score(b) || 0; }
/* Fainter lines as they pile up: 0.4 up to 90 lines, 0.12 at 1,000. */
function opacity(n) {
  return Math.max(0.08, Math.min(0.4, 3.8 / Math.sqrt(Math.max(n, 1)))).toFixed(2);
}
function key(v) { return typeof v + ':' + String(v); }
/* A scale maps data to pixels [a, b]: 'lin' or 'log' over vals, or 'cat' over cats. */
function scale(kind, vals, a, b, cats) {
  var s = {kind: kind, a: a, b: b};
  if (kind === 'cat') {
    s.cats = cats;
    s.idx = {};
    cats.forEach(function (c, i) { s.idx[c.k] = i; });
    s.f = function (v) {
      var i = s.idx[key(v)];
      return i === undefined ? NaN : a + (i + 0.5) / cats.length * (b - a);
    };
    return s;
  }
  var lo = Infinity, hi = -Infinity;
  vals.forEach(function (v) {
    if (!fin(v) || (kind === 'log' && !(v > 0))) return;
    v = kind === 'log' ? Math.log10(v) : v;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  });
  if (lo > hi) { lo = 0; hi = 1; }
  if (hi === lo) { var d = Math.abs(lo) * 0.1 || 0.5; lo -= d; hi += d; }
  var pad = (hi - lo) * 0.04;
  s.lo = lo - pad;
  s.hi = hi + pad;
  s.f = function (v) {
    if (!fin(v) || (kind === 'log' && !(v > 0))) return NaN;
    if (kind === 'log') v = Math.log10(v);
    return a + (v - s.lo) / (s.hi - s.lo) * (b - a);
  };
  return s;
}
/* The distinct values of a categorical axis: numbers ascending, then strings. */
function categories(vals) {
  var seen = {}, out = [];
  vals.forEach(function (v) {
    if (v === null || v === undefined) return;
    var k = key(v);
    if (!seen[k]) { seen[k] = 1; out.push({k: k, v: v}); }
  });
  out.sort(function (x, y) {
    var nx = typeof x.v === 'number', ny = typeof y.v === 'number';
    if (nx && ny) return x.v - y.v;
    if (nx !== ny) return nx ? -1 : 1;
    return String(x.v) < String(y.v) ? -1 : String(x.v) > String(y.v) ? 1 : 0;
  });
  return out;
}
/* Tick values of a scale, in data units: powers of ten on log axes, 1-2-5 steps else. */
function ticks(s, n) {
  var out = [], i, v;
  if (s.kind === 'cat') return s.cats.map(function (c) { return c.v; });
  if (s.kind === 'log') {
    for (i = Math.ceil(s.lo); i <= Math.floor(s.hi); i++) out.push(Math.pow(10, i));
    if (out.length >= 2) return out;
    out = [];
  }
  var step = Math.pow(10, Math.floor(Math.log10((s.hi - s.lo) / n)));
  var err = (s.hi - s.lo) / n / step;
  step *= err >= 5 ? 5 : err >= 2 ? 2 : 1;
  if (s.integer && s.kind === 'lin') step = Math.max(step, 1);
  for (v = Math.ceil(s.lo / step) * step; v <= s.hi + step * 1e-9; v += step)
    out.push(s.kind === 'log' ? Math.pow(10, v) : +v.toPrecision(12));
  return out;
}
function line(x1, y1, x2, y2, cls) {
  return tag('line', {'class': cls, x1: r1(x1), y1: r1(y1), x2: r1(x2), y2: r1(y2)});
}
function text(x, y, s, cls, anchor, rotate) {
  return tag('text', {'class': cls, x: r1(x), y: r1(y), 'text-anchor': anchor,
                      transform: rotate}, esc(s));
}
/* Axes: x at the bottom, y on the left, with ticks, grid lines and labels. */
function axes(xs, ys, w, h, m, xl, yl) {
  var o = line(m.l, h - m.b, w - m.r, h - m.b, 'ax') + line(m.l, m.t, m.l, h - m.b, 'ax');
  /* Category labels get the room of their category, at about 7 px per character. */
  var room = xs.kind === 'cat' ? Math.floor((w - m.l - m.r) / xs.cats.length / 7) : 12;
  ticks(xs, 6).forEach(function (v) {
    var x = xs.f(v);
    if (!(x >= m.l - 0.5 && x <= w - m.r + 0.5)) return;
    o += line(x, h - m.b, x, h - m.b + 4, 'ax') +
      text(x, h - m.b + 15, clip(fmt(v), Math.max(3, room)), 'tk', 'middle');
  });
  ticks(ys, 5).forEach(function (v) {
    var y = ys.f(v);
    if (!(y >= m.t - 0.5 && y <= h - m.b + 0.5)) return;
    o += line(m.l - 4, y, m.l, y, 'ax') + line(m.l, y, w - m.r, y, 'gr') +
      text(m.l - 6, y + 3, fmt(v), 'tk', 'end');
  });
  var ym = r1((m.t + h - m.b) / 2);
  o += text((m.l + w - m.r) / 2, h - 4, clip(xl, 48), 'lb', 'middle');
  o += text(12, ym, clip(yl, 40), 'lb', 'middle', 'rotate(-90 12 ' + ym + ')');
  return o;
}
function svg(w, h, body, marks) {
  return tag('svg', {xmlns: 'http://www.w3.org/2000/svg', width: w, height: h,
                     viewBox: '0 0 ' + w + ' ' + h, 'data-marks': marks}, body);
}
function note(s) { return tag('p', {'class': 'note'}, esc(s)); }
/* The width a plot gets: its container's, within [600, 1200] px. */
function width(el) { return Math.max(600, Math.min(1200, el.clientWidth || 920)); }
function nodata(el, why) {
  el.innerHTML = note(why);
  el.setAttribute('data-drawn', '0');
}
function legend(el) {
  function entry(cls, style, label) {
    return tag('span', {}, tag('i', {'class': cls, style: style}, '') + esc(label));
  }
  var n = SN.map(function () { return 0; }), o = '';
  T.forEach(function (t) { n[t[1]]++; });
  SN.forEach(function (s, i) {
    if (n[i]) o += entry(undefined, 'background:' + SC[i], s + ' (' + n[i] + ')');
  });
  if (bestId >= 0) o += entry('bestkey', undefined, 'best: trial ' + bestId);
  if (D.rungs && D.rungs.length) o += entry('rungkey', undefined, 'rung');
  if (S.some(function (x) { return x[1] !== lastAttempt[x[0]]; }))
    o += entry('oldkey', undefined, 'earlier attempt');
  el.innerHTML = o;
}
/* The y scale of the chosen metric: log when asked (values <= 0 are then left out). */
function yscale(vals, a, b) { return scale(ui.logy ? 'log' : 'lin', vals, a, b); }
function ylabel() { return D.metrics[M] + (ui.logy ? ' (log)' : ''); }
/* The time attributes the curves can be drawn against: the scheduler's first. */
function xattrs() {
  var out = ['training_iteration'];
  if (D.series) out.push('time_total_s');
  if (D.series && D.time_attr && out.indexOf(D.time_attr) < 0 &&
      D.metrics.indexOf(D.time_attr) >= 0)
    out.push(D.time_attr);
  var first = out.indexOf(D.time_attr);
  if (first > 0) out.unshift(out.splice(first, 1)[0]);
  return out;
}
/* A series' x values along attribute a: iterations, time_total_s or a metric. */
function xsOf(s, a) {
  if (a === 'training_iteration') return s[2];
  if (a === 'time_total_s') return s[3] || [];
  var k = D.metrics.indexOf(a);
  return k >= 0 && s[4][k] ? s[4][k] : [];
}
/* ---- learning curves: every report of every attempt, earlier attempts faded ---- */
function curves(el) {
  var xa = xattrs().indexOf(ui.xattr) >= 0 ? ui.xattr : xattrs()[0];
  var xv = [], yv = [], drawn = 0, old = 0, best = '', ends = '', rungs = [];
  var C = S.filter(function (s) { return s[4][M]; });
  C.forEach(function (s) {
    var x = xsOf(s, xa), y = s[4][M];
    for (var i = 0; i < y.length; i++) { xv.push(x[i]); yv.push(y[i]); }
  });
  if (!yv.some(fin)) return nodata(el, 'No trial reported ' + D.metrics[M] + ' during training.');
  /* The rungs are in the scheduler's time attribute. */
  if (xa === (D.time_attr || 'training_iteration')) rungs = D.rungs || [];
  rungs.forEach(function (r) { xv.push(r); });
  var w = width(el), h = 420, m = {l: 64, r: 16, t: 24, b: 42};
  var xs = scale(ui.logx ? 'log' : 'lin', xv, m.l, w - m.r);
  var ys = yscale(yv, h - m.b, m.t);
  var o = axes(xs, ys, w, h, m, xa + (ui.logx ? ' (log)' : ''), ylabel());
  rungs.forEach(function (r) {
    var x = xs.f(r);
    if (!isNaN(x))
      o += line(x, m.t, x, h - m.b, 'rung') + text(x + 3, m.t - 6, 'rung ' + fmt(r), 'tk');
  });
  function path(s, cls) {
    var d = '', pen = 'M', lx = NaN, ly = NaN, t = byId[s[0]], st = t ? t[1] : 0;
    var x = xsOf(s, xa), y = s[4][M], last = s[1] === lastAttempt[s[0]];
    for (var i = 0; i < y.length; i++) {
      var px = xs.f(x[i]), py = ys.f(y[i]);
      if (isNaN(px) || isNaN(py)) { pen = 'M'; continue; }
      d += pen + r1(px) + ' ' + r1(py);
      pen = 'L';
      lx = px;
      ly = py;
    }
    if (!d) return '';
    if (d.indexOf('L') < 0) d += 'h0.01';
    /* A dot where a trial stopped early or failed: it ends at its rung. */
    if (last && (SN[st] === 'STOPPED' || SN[st] === 'ERROR'))
      ends += tag('circle', {'class': 'end', cx: r1(lx), cy: r1(ly), r: 2.5, fill: SC[st]});
    if (last) drawn++;
    else old++;
    var tip = 'trial ' + s[0] + (last ? '' : ', attempt ' + s[1] + ' (earlier)') +
      ' (' + SN[st] + ')';
    if (t && last) tip += ': ' + fmt(final(t)) + ' after ' + t[2];
    return tag('path', {'class': last ? cls : cls + ' old', stroke: SC[st], d: d,
                        'data-tip': tip});
  }
  var g = '', faded = '';
  C = C.slice().sort(function (a, b) { return byScore(byId[a[0]], byId[b[0]]); });
  C.forEach(function (s) {
    if (s[1] !== lastAttempt[s[0]]) faded += path(s, 'cv');
    else if (s[0] === bestId) best += path(s, 'cv best');
    else g += path(s, 'cv');
  });
  o += tag('g', {'class': 'faded'}, faded) +
    tag('g', {'stroke-opacity': opacity(C.length)}, g) + ends + best;
  el.innerHTML = svg(w, h, o, drawn);
  el.setAttribute('data-drawn', String(drawn));
  el.setAttribute('data-old', String(old));
  el.setAttribute('data-x', xa);
}
/* ---- optimisation history: each trial's value by number and by wall time ---- */
function history(el) {
  var pts = [], bests = {};
  if (ui.hval === 'best')
    S.forEach(function (s) {
      if (!s[4][M]) return;
      s[4][M].forEach(function (v) {
        var b = bests[s[0]];
        if (fin(v) && (b === undefined || sign * v > sign * b)) bests[s[0]] = v;
      });
    });
  T.forEach(function (t) {
    var v = ui.hval === 'best' ? bests[t[0]] : final(t);
    if (SN[t[1]] !== 'ERROR' && fin(v)) pts.push({t: t, v: v});
  });
  if (!pts.length) return nodata(el, 'No trial reported ' + D.metrics[M] + '.');
  var cw = width(el), w = Math.max(300, Math.floor((cw - 8) / 2)), h = 300;
  var m = {l: 64, r: 12, t: 14, b: 40}, html = '', n = 0;
  var ys = yscale(pts.map(function (p) { return p.v; }), h - m.b, m.t);
  var label = (ui.hval === 'best' ? 'best ' : 'last ') + ylabel();
  /* x: the trial number, then the seconds from the first start to the trial's end. */
  [function (t) { return t[0]; }, function (t) { return t[9]; }].forEach(function (xf, k) {
    var P = pts.filter(function (p) { return fin(xf(p.t)); });
    P.sort(function (a, b) { return xf(a.t) - xf(b.t) || a.t[0] - b.t[0]; });
    var xs = scale('lin', P.map(function (p) { return xf(p.t); }), m.l, w - m.r);
    xs.integer = k === 0;
    var o = axes(xs, ys, w, h, m, k ? 'wall time at the trial\u2019s end (s)' : 'trial', label);
    var run = NaN, d = '', dots = '', bo = '';
    P.forEach(function (p) {
      var x = xs.f(xf(p.t)), y = ys.f(p.v);
      if (!isNaN(ys.f(p.v)) && (isNaN(run) || sign * p.v > sign * run)) {
        /* The best so far: a step down (or up) at each improvement. */
        d += (d ? 'H' + r1(x) + 'V' : 'M' + r1(x) + ' ') + r1(y);
        run = p.v;
      }
      if (isNaN(x) || isNaN(y)) return;
      var b = p.t[0] === bestId;
      var c = tag('circle', {cx: r1(x), cy: r1(y), r: b ? 5 : 3, fill: SC[p.t[1]],
                             'class': b ? 'best' : undefined,
                             'data-tip': 'trial ' + p.t[0] + ': ' + fmt(p.v)});
      if (b) bo = c;
      else dots += c;
      if (!k) n++;
    });
    if (d) d += 'H' + r1(w - m.r);
    o += dots + tag('path', {'class': 'bsf', d: d || undefined}, '') + bo;
    html += tag('figure', {}, svg(w, h, o, P.length));
  });
  el.innerHTML = html + note('Line: the best so far (' + (sign > 0 ? 'max' : 'min') + ').');
  el.setAttribute('data-drawn', String(n));
}
/* ---- several objectives: the Pareto front (D.pareto, computed by the report writer) ---- */
/* Two objectives: every finished trial at its two values, the front's trials ringed and
 * joined in the first objective's order. Three or more: parallel coordinates of the
 * objectives, better at the top, the front's trials drawn thick on top. Each front mark
 * carries its trial id (data-trial) and the container the front's size (data-front). */
function paretoPart(el) {
  var P = D.pareto;
  if (!P || !P.trials || !P.trials.length)
    return nodata(el, 'No finished trial reported the objectives.');
  var k = P.objectives.length, on = {}, pts = [];
  P.front.forEach(function (id) { on[id] = 1; });
  P.trials.forEach(function (id, i) {
    var t = byId[id];
    pts.push({id: id, v: P.values[i], st: t ? t[1] : 0, front: !!on[id]});
  });
  function tip(p) {
    return 'trial ' + p.id + ': ' + P.objectives.map(function (name, j) {
      return name + ' ' + fmt(p.v[j]);
    }).join(', ') + (p.front ? ' (front)' : '');
  }
  var w = width(el), h = 380, o = '', fo = '', n = 0, nf = 0;
  if (k === 2) {
    var m = {l: 64, r: 16, t: 14, b: 40};
    var xs = scale('lin', pts.map(function (p) { return p.v[0]; }), m.l, w - m.r);
    var ys = scale('lin', pts.map(function (p) { return p.v[1]; }), h - m.b, m.t);
    o = axes(xs, ys, w, h, m, P.objectives[0] + ' (' + P.modes[0] + ')',
             P.objectives[1] + ' (' + P.modes[1] + ')');
    var F = [];
    pts.forEach(function (p) {
      var x = xs.f(p.v[0]), y = ys.f(p.v[1]);
      if (isNaN(x) || isNaN(y)) return;
      n++;
      if (p.front) { F.push({x: x, y: y, p: p}); return; }
      o += tag('circle', {cx: r1(x), cy: r1(y), r: 3, fill: SC[p.st], 'class': 'mo',
                          'data-tip': tip(p)});
    });
    F.sort(function (a, b) { return a.x - b.x || a.y - b.y || a.p.id - b.p.id; });
    var d = F.map(function (f, i) { return (i ? 'L' : 'M') + r1(f.x) + ' ' + r1(f.y); }).join('');
    fo = tag('path', {'class': 'frontline', d: d || undefined}, '');
    F.forEach(function (f) {
      fo += tag('circle', {cx: r1(f.x), cy: r1(f.y), r: 5, fill: SC[f.p.st], 'class': 'front',
                           'data-trial': f.p.id, 'data-tip': tip(f.p)});
      nf++;
    });
    el.innerHTML = svg(w, h, o + fo, n) +
      note('Every finished trial (' + P.from + ') with both objectives at its last values; ' +
           'ringed and joined: the ' +
           P.front.length + ' trials no other finished trial dominates (the Pareto front).');
  } else {
    var mm = {l: 60, r: 60, t: 20, b: 56}, gap = (w - mm.l - mm.r) / (k - 1);
    var sc = P.objectives.map(function (name, j) {
      var vals = pts.map(function (p) { return p.v[j]; });
      return P.modes[j] === 'max' ? scale('lin', vals, h - mm.b, mm.t)
                                  : scale('lin', vals, mm.t, h - mm.b);
    });
    P.objectives.forEach(function (name, j) {
      var x = mm.l + j * gap;
      o += line(x, mm.t, x, h - mm.b, 'ax');
      ticks(sc[j], 5).forEach(function (v) {
        var y = sc[j].f(v);
        if (y >= mm.t - 0.5 && y <= h - mm.b + 0.5)
          o += line(x - 3, y, x, y, 'ax') + text(x - 5, y + 3, fmt(v), 'tk', 'end');
      });
      o += text(x, h - mm.b + 18 + (j % 2) * 14, clip(name + ' (' + P.modes[j] + ')', 24), 'lb',
                'middle');
    });
    var lines = '';
    pts.forEach(function (p) {
      var dd = '';
      /* As in the scatter, a trial missing an objective is not drawn. */
      if (!p.v.every(fin)) return;
      P.objectives.forEach(function (name, j) {
        dd += (j ? 'L' : 'M') + r1(mm.l + j * gap) + ' ' + r1(sc[j].f(p.v[j]));
      });
      n++;
      if (p.front) {
        fo += tag('path', {'class': 'pc front', stroke: SC[p.st], d: dd, 'data-trial': p.id,
                           'data-tip': tip(p)});
        nf++;
      } else {
        lines += tag('path', {'class': 'pc', stroke: SC[p.st], d: dd, 'data-tip': tip(p)});
      }
    });
    el.innerHTML = svg(w, h, tag('g', {'stroke-opacity': opacity(n)}, lines) + o + fo, n) +
      note('One line per finished trial (' + P.from + ') with every objective, through its ' +
           'last value of each ' +
           'objective, better at the top; thick: the ' + P.front.length + ' trials of the ' +
           'Pareto front.');
  }
  el.setAttribute('data-drawn', String(n));
  el.setAttribute('data-front', String(nf));
}
/* The front's hypervolume after each finished trial, by trial number, against the
 * reference point the writer chose (named below the plot). */
function hypervolume(el) {
  var P = D.pareto;
  if (!P || !P.trials || !P.trials.length)
    return nodata(el, 'No finished trial reported the objectives.');
  var pts = [];
  P.trials.forEach(function (id, i) {
    if (fin(P.hypervolume[i])) pts.push({id: id, v: P.hypervolume[i]});
  });
  if (!pts.length) return nodata(el, 'No hypervolume was computed.');
  var w = width(el), h = 300, m = {l: 72, r: 16, t: 14, b: 40};
  var xs = scale('lin', pts.map(function (p) { return p.id; }), m.l, w - m.r);
  xs.integer = true;
  var ys = scale('lin', pts.map(function (p) { return p.v; }).concat([0]), h - m.b, m.t);
  var o = axes(xs, ys, w, h, m, 'trial', 'hypervolume'), d = '';
  pts.forEach(function (p, i) {
    var x = xs.f(p.id), y = ys.f(p.v);
    d += (i ? 'H' + r1(x) + 'V' : 'M' + r1(x) + ' ') + r1(y);
    o += tag('circle', {cx: r1(x), cy: r1(y), r: 2.5, 'class': 'hv',
                        'data-tip': 'after trial ' + p.id + ': ' + fmt(p.v)});
  });
  o += tag('path', {'class': 'hvline', d: d}, '');
  var ref = P.objectives.map(function (name, j) {
    return name + ' = ' + fmt(P.reference[j]);
  }).join(', ');
  el.innerHTML = svg(w, h, o, pts.length) +
    note('Hypervolume of the Pareto front of the finished trials up to each trial number, ' +
         'bounded by the reference point ' + ref + ' (' + P.reference_rule + ')' +
         (P.hypervolume_complete === false ? '; stopped early: too costly to go on' : '') + '.');
  el.setAttribute('data-drawn', String(pts.length));
  el.setAttribute('data-reference', ref);
}
/* ---- hyperparameter importance (computed by the report writer) ---- */
function importance(el) {
  var I = D.importance, E = null;
  if (!I) return nodata(el, 'This data carries no importance.');
  (I.by_metric || []).forEach(function (e) { if (e.metric === D.metrics[M]) E = e; });
  if (!E) return nodata(el, 'No importance was computed for ' + D.metrics[M] + '.');
  if (E.error || !E.params)
    return nodata(el, I.method + ' for ' + D.metrics[M] + ': ' + (E.error || 'none') + '.');
  var bars = [];
  E.params.forEach(function (v, j) {
    if (v !== null && v !== undefined)
      bars.push({name: D.params[j].name, v: v, sd: E.sd ? E.sd[j] : null, pair: false});
  });
  (E.pairs || []).forEach(function (q) {
    bars.push({name: D.params[q[0]].name + ' \u00d7 ' + D.params[q[1]].name, v: q[2],
               pair: true});
  });
  if (!bars.length) return nodata(el, 'No parameter varies.');
  bars.sort(function (a, b) { return b.v - a.v || (a.pair - b.pair); });
  var rowh = 22, m = {l: 200, r: 70, t: 8, b: 36}, w = width(el);
  var h = m.t + m.b + rowh * bars.length;
  var xs = scale('lin', [0, Math.max(0.05, bars[0].v)], m.l, w - m.r);
  xs.lo = 0;
  var o = line(m.l, m.t, m.l, h - m.b, 'ax');
  ticks(xs, 6).forEach(function (v) {
    var x = xs.f(v);
    if (x > w - m.r + 0.5) return;
    o += line(x, m.t, x, h - m.b, 'gr') + text(x, h - m.b + 14, fmt(v), 'tk', 'middle');
  });
  o += text((m.l + w - m.r) / 2, h - 4, 'share of the variance of ' + D.metrics[M], 'lb',
            'middle');
  bars.forEach(function (b, i) {
    var y = m.t + i * rowh, x = xs.f(Math.max(0, b.v));
    var tip = b.name + ': ' + fmt(b.v) + (b.sd !== null && b.sd !== undefined ?
                                          ' \u00b1 ' + fmt(b.sd) + ' over the trees' : '');
    o += text(m.l - 6, y + rowh / 2 + 4, clip(b.name, 30), 'tk', 'end') +
      tag('rect', {'class': b.pair ? 'bar pair' : 'bar', x: m.l, y: y + 3,
                   width: r1(Math.max(0.5, x - m.l)), height: rowh - 6, 'data-tip': tip,
                   'data-name': b.name}) +
      text(x + 4, y + rowh / 2 + 4, fmt(b.v), 'tk');
  });
  el.innerHTML = svg(w, h, o, bars.length) +
    note(I.method + ' (Hutter et al. 2014, as Optuna\u2019s default evaluator): a random ' +
         'forest of ' + I.trees + ' trees (seed ' + I.seed + ') fitted to the ' + E.n_trials +
         ' ' + I.from + ' trials\u2019 last ' + D.metrics[M] + ', decomposed into each ' +
         'parameter\u2019s main effect and each pair\u2019s interaction (\u00d7, the largest ' +
         'shown); the rest is interactions of three or more.');
  el.setAttribute('data-drawn', String(bars.length));
  el.setAttribute('data-order', bars.map(function (b) { return b.name; }).join('|'));
}
/* ---- each parameter against the final metric ---- */
/* null for constants, 'cat' for choices and non-numbers, 'log' for log domains, 'lin'. */
function paramKind(p, j) {
  var d = p.domain || '';
  if (d === 'constant') return null;
  if (p.type !== 'float' && p.type !== 'int') return 'cat';
  if (d === 'choice' || d === 'grid_search') return 'cat';
  if (d.indexOf('log') < 0) return 'lin';
  for (var i = 0; i < T.length; i++)
    if (fin(T[i][4][j]) && !(T[i][4][j] > 0)) return 'lin';
  return 'log';
}
function paramScale(j, a, b) {
  var p = D.params[j], kind = paramKind(p, j);
  var vals = T.map(function (t) { return t[4][j]; });
  if (!kind) return null;
  if (kind === 'cat') return scale('cat', null, a, b, categories(vals));
  var s = scale(kind, vals, a, b);
  s.integer = p.type === 'int';
  return s;
}
/* A fixed offset in [-0.5, 0.5) per trial, to spread points within a category. */
function jitter(id) {
  var x = Math.sin(id * 12.9898 + 78.233) * 43758.5453;
  return x - Math.floor(x) - 0.5;
}
function scatter(el) {
  var withm = T.filter(function (t) { return fin(final(t)); }).sort(byScore);
  var total = 0, consts = [], html = '';
  if (!NP) return nodata(el, 'The search space has no parameters.');
  if (!withm.length) return nodata(el, 'No trial reported ' + D.metrics[M] + '.');
  /* Four plots a row when they fit at 240 px or more (8 px gaps). */
  var cw = width(el), per = Math.max(1, Math.min(4, Math.floor((cw + 8) / 248)));
  var w = Math.min(340, Math.floor((cw + 8) / per) - 8), h = 230;
  var m = {l: 58, r: 12, t: 12, b: 40};
  var ys = yscale(withm.map(final), h - m.b, m.t);
  D.params.forEach(function (p, j) {
    var xs = paramScale(j, m.l, w - m.r), n = 0, bo = '';
    if (!xs) return consts.push(p.name + ' = ' + fmt(T.length ? T[0][4][j] : ''));
    var o = axes(xs, ys, w, h, m, p.name + (xs.kind === 'log' ? ' (log)' : ''), ylabel());
    withm.forEach(function (t) {
      var x = xs.f(t[4][j]), y = ys.f(final(t)), b = t[0] === bestId;
      if (isNaN(x) || isNaN(y)) return;
      if (xs.kind === 'cat') x += jitter(t[0]) * 0.5 * (w - m.l - m.r) / xs.cats.length;
      var tip = 'trial ' + t[0] + ': ' + fmt(t[4][j]) + ' \u2192 ' + fmt(final(t));
      var c = tag('circle', {cx: r1(x), cy: r1(y), r: b ? 5 : 2.5, fill: SC[t[1]],
                             'class': b ? 'best' : undefined, 'data-tip': tip});
      if (b) bo = c;
      else o += c;
      n++;
    });
    total += n;
    html += tag('figure', {}, svg(w, h, o + bo, n));
  });
  if (consts.length) html += note('Constant: ' + consts.join(', '));
  el.innerHTML = html;
  el.setAttribute('data-drawn', String(total));
}
/* ---- contour: the metric over two chosen parameters ---- */
/* The varying parameters, by index. */
function varying() {
  var out = [];
  for (var j = 0; j < NP; j++) if (paramKind(D.params[j], j)) out.push(j);
  return out;
}
/* A colour from dark blue (worst) to yellow (best), for q in [0, 1]. */
function colour(q) {
  var stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  q = Math.max(0, Math.min(1, q)) * (stops.length - 1);
  var i = Math.min(stops.length - 2, Math.floor(q)), f = q - i, c = [0, 1, 2].map(function (k) {
    return Math.round(stops[i][k] + f * (stops[i + 1][k] - stops[i][k]));
  });
  return 'rgb(' + c.join(',') + ')';
}
function contourSelect(id, cur) {
  return tag('select', {id: id}, varying().map(function (j) {
    return tag('option', {value: j, selected: j === cur ? 'selected' : undefined},
               esc(D.params[j].name));
  }).join(''));
}
function contour(el) {
  var V = varying();
  if (V.length < 2) return nodata(el, 'A contour needs two parameters that vary.');
  /* Default: the two most important parameters, else the first two. */
  if (V.indexOf(ui.cx) < 0 || V.indexOf(ui.cy) < 0 || ui.cx === ui.cy) {
    var order = V.slice(), E = null;
    ((D.importance && D.importance.by_metric) || []).forEach(function (e) {
      if (e.metric === D.metrics[M] && e.params) E = e;
    });
    if (E) order.sort(function (a, b) { return (E.params[b] || 0) - (E.params[a] || 0) || a - b; });
    if (V.indexOf(ui.cx) < 0) ui.cx = order[0];
    if (V.indexOf(ui.cy) < 0 || ui.cy === ui.cx) ui.cy = order[order[0] === ui.cx ? 1 : 0];
  }
  var head = tag('p', {}, 'x ' + contourSelect('cx', ui.cx) + ' y ' + contourSelect('cy', ui.cy));
  var withm = T.filter(function (t) { return fin(final(t)); }).sort(byScore);
  if (!withm.length) {
    el.innerHTML = head + note('No trial reported ' + D.metrics[M] + '.');
    el.setAttribute('data-drawn', '0');
    return;
  }
  var w = Math.min(width(el), 760), h = 460, m = {l: 64, r: 90, t: 12, b: 42};
  var xs = paramScale(ui.cx, m.l, w - m.r), ys = paramScale(ui.cy, h - m.b, m.t);
  var vals = withm.map(final), lo = Infinity, hi = -Infinity;
  vals.forEach(function (v) { lo = Math.min(lo, v); hi = Math.max(hi, v); });
  function q(v) { return hi > lo ? (sign > 0 ? (v - lo) / (hi - lo) : (hi - v) / (hi - lo)) : 0.5; }
  /* Each trial in the plot's unit square, and each grid cell's value by inverse distance
   * weighting (power 2) of the trials: smooth between them, exact at them. */
  var P = [];
  withm.forEach(function (t) {
    var x = xs.f(t[4][ui.cx]), y = ys.f(t[4][ui.cy]);
    if (!isNaN(x) && !isNaN(y)) P.push({t: t, x: x, y: y, v: final(t)});
  });
  var G = 36, cw = (w - m.l - m.r) / G, ch = (h - m.t - m.b) / G, cells = '';
  for (var gy = 0; gy < G && P.length; gy++)
    for (var gx = 0; gx < G; gx++) {
      var cx = m.l + (gx + 0.5) * cw, cy = m.t + (gy + 0.5) * ch, sw = 0, sv = 0;
      for (var i = 0; i < P.length; i++) {
        var dx = (P[i].x - cx) / (w - m.l - m.r), dy = (P[i].y - cy) / (h - m.t - m.b);
        var wt = 1 / (dx * dx + dy * dy + 1e-9);
        sw += wt;
        sv += wt * P[i].v;
      }
      cells += tag('rect', {x: r1(m.l + gx * cw), y: r1(m.t + gy * ch), width: r1(cw + 0.6),
                            height: r1(ch + 0.6), fill: colour(q(sv / sw))});
    }
  /* The cells over the axes' grid lines. */
  var o = axes(xs, ys, w, h, m, D.params[ui.cx].name + (xs.kind === 'log' ? ' (log)' : ''),
               D.params[ui.cy].name + (ys.kind === 'log' ? ' (log)' : '')) +
    tag('g', {'class': 'cells'}, cells);
  var n = 0, bo = '';
  P.forEach(function (p) {
    var b = p.t[0] === bestId;
    var c = tag('circle', {'class': b ? 'best' : 'pt', cx: r1(p.x), cy: r1(p.y), r: b ? 5 : 3,
                           fill: colour(q(p.v)),
                           'data-tip': 'trial ' + p.t[0] + ': ' + fmt(p.t[4][ui.cx]) + ', ' +
                             fmt(p.t[4][ui.cy]) + ' \u2192 ' + fmt(p.v)});
    if (b) bo = c;
    else o += c;
    n++;
  });
  /* The colour key. */
  var kx = w - m.r + 18, kh = h - m.t - m.b;
  for (var k = 0; k < 20; k++)
    o += tag('rect', {x: kx, y: r1(m.t + k * kh / 20), width: 14, height: r1(kh / 20 + 0.6),
                      fill: colour(1 - k / 20)});
  o += text(kx + 18, m.t + 10, fmt(sign > 0 ? hi : lo), 'tk') +
    text(kx + 18, h - m.b, fmt(sign > 0 ? lo : hi), 'tk');
  el.innerHTML = head + svg(w, h, o + bo, n) +
    note('Colour: ' + D.metrics[M] + ' (better is brighter), interpolated between the ' +
         'trials by inverse distance; dots: the trials.');
  el.setAttribute('data-drawn', String(n));
  el.setAttribute('data-cells', String(P.length ? G * G : 0));
}
/* ---- parallel coordinates: one axis per varying parameter, then the metric ---- */
function parallel(el) {
  var axs = [], j;
  for (j = 0; j < NP; j++) if (paramKind(D.params[j], j)) axs.push(j);
  axs.push(-1);
  var withm = T.filter(function (t) { return fin(final(t)); }).sort(byScore);
  if (!withm.length) return nodata(el, 'No trial reported ' + D.metrics[M] + '.');
  var gap = 130, m = {l: 60, r: 60, t: 20, b: 56}, h = 380;
  var w = Math.max(width(el), m.l + m.r + gap * (axs.length - 1));
  if (axs.length > 1) gap = (w - m.l - m.r) / (axs.length - 1);
  var sc = axs.map(function (j) {
    if (j >= 0) return paramScale(j, h - m.b, m.t);
    /* Better at the top whatever the mode. */
    var f = withm.map(final);
    return sign > 0 ? yscale(f, h - m.b, m.t) : yscale(f, m.t, h - m.b);
  });
  var o = '', bo = '', n = 0, lines = '';
  axs.forEach(function (j, k) {
    var x = m.l + k * gap, s = sc[k], tv = ticks(s, 5);
    o += line(x, m.t, x, h - m.b, 'ax');
    var every = Math.ceil(tv.length / 12);
    tv = tv.filter(function (v, i) { return i % every === 0; });
    tv.forEach(function (v) {
      var y = s.f(v);
      if (y >= m.t - 0.5 && y <= h - m.b + 0.5)
        o += line(x - 3, y, x, y, 'ax') +
          text(x - 5, y + 3, clip(fmt(v), 16), 'tk', 'end');
    });
    var name = j < 0 ? D.metrics[M] : D.params[j].name + (s.kind === 'log' ? ' (log)' : '');
    o += text(x, h - m.b + 18 + (k % 2) * 14, clip(name, 24), 'lb', 'middle');
  });
  withm.forEach(function (t) {
    var d = '', pen = 'M';
    axs.forEach(function (j, k) {
      var y = sc[k].f(j < 0 ? final(t) : t[4][j]);
      if (sc[k].kind === 'cat' && !isNaN(y))
        y += jitter(t[0] + k) * 0.4 * (h - m.t - m.b) / sc[k].cats.length;
      if (isNaN(y)) { pen = 'M'; return; }
      d += pen + r1(m.l + k * gap) + ' ' + r1(y);
      pen = 'L';
    });
    if (!d) return;
    var cls = t[0] === bestId ? 'pc best' : 'pc';
    var tip = 'trial ' + t[0] + ': ' + fmt(final(t));
    var p = tag('path', {'class': cls, stroke: SC[t[1]], d: d, 'data-tip': tip});
    if (t[0] === bestId) bo = p;
    else lines += p;
    n++;
  });
  o = tag('g', {'stroke-opacity': opacity(n)}, lines) + o;
  el.innerHTML = svg(w, h, o + bo, n);
  el.setAttribute('data-drawn', String(n));
}
/* ---- the table of trials, sorted by the main metric (best first) until a click ---- */
/* The table's sort (a column header, or null for the main metric) and row limit: kept
 * across tuneReport() calls, so that a redraw with new data keeps the user's order. */
var tableState = {col: null, dir: 0, limit: 200}, tableDraw = null;
function table(el) {
  var cols = [{h: 'trial', v: function (t) { return t[0]; }},
              {h: 'status', v: function (t) { return SN[t[1]]; }},
              {h: 'iterations', v: function (t) { return t[2]; }}];
  D.params.forEach(function (p, j) {
    cols.push({h: p.name, v: function (t) { return t[4][j]; }});
  });
  D.metrics.forEach(function (name, k) {
    cols.push({h: name, v: function (t) { return t[5][k]; }});
  });
  cols.push({h: 'time_total_s', v: function (t) { return t[3]; }});
  cols.push({h: 'error', v: function (t) { return t[6]; }});
  var order = T.slice(), sortCol = 3 + NP + M, dir = -sign, last = cols.length - 1;
  cols.forEach(function (c, i) {
    if (c.h === tableState.col) { sortCol = i; dir = tableState.dir; }
  });
  function none(x) {
    return x === null || x === undefined || (typeof x === 'number' && isNaN(x));
  }
  /* Missing values last; ties by trial id. */
  function cmp(a, b) {
    var x = cols[sortCol].v(a), y = cols[sortCol].v(b), nx = none(x), ny = none(y);
    if (nx || ny) return nx === ny ? a[0] - b[0] : nx ? 1 : -1;
    if (typeof x !== 'number' || typeof y !== 'number') { x = String(x); y = String(y); }
    return x === y ? a[0] - b[0] : x < y ? -dir : dir;
  }
  function head() {
    return '<thead><tr>' + cols.map(function (c, i) {
      var cls = i === sortCol ? (dir > 0 ? 'asc' : 'desc') : undefined;
      return tag('th', {'data-col': i, 'class': cls}, esc(c.h));
    }).join('') + '<\/tr><\/thead>';
  }
  function cell(t, c, i) {
    var v = c.v(t);
    if (i === 1) {
      var st = {'class': 'st', style: 'background:' + SC[t[1]]};
      return tag('td', {}, tag('span', st, esc(v)));
    }
    if (i === last)
      return v ? tag('td', {'class': 'err', title: v}, esc(clip(v, 120))) : '<td><\/td>';
    if (typeof v !== 'number') return tag('td', {}, esc(fmt(v)));
    return tag('td', {'class': 'n', title: isFinite(v) ? v : undefined}, esc(fmt(v)));
  }
  /* The first 200 rows (current order) until asked for all: big sweeps open fast. */
  function draw() {
    order.sort(cmp);
    var rows = order.slice(0, tableState.limit).map(function (t) {
      var cells = cols.map(function (c, i) { return cell(t, c, i); }).join('');
      return tag('tr', {'class': t[0] === bestId ? 'best' : undefined}, cells);
    });
    var body = head() + tag('tbody', {}, rows.join(''));
    var more = order.length - rows.length;
    el.innerHTML = tag('table', {'class': 'trials'}, body) +
      (more > 0 ? tag('p', {}, tag('button', {type: 'button', id: 'all'}, 'show all ' +
                                   order.length + ' trials (' + more + ' more)')) : '') +
      (D.metrics_truncated ? note('More metrics are in results.csv.') : '');
    el.setAttribute('data-drawn', String(rows.length));
    el.setAttribute('data-rows', String(order.length));
  }
  tableDraw = function (e) {
    if (e.target.id === 'all') { tableState.limit = Infinity; draw(); return; }
    var th = e.target.closest('th');
    if (!th) return;
    var c = +th.getAttribute('data-col');
    if (c === sortCol) dir = -dir;
    else { sortCol = c; dir = 1; }
    tableState.col = cols[c].h;
    tableState.dir = dir;
    draw();
  };
  draw();
}
/* Each part draws on its own: a failure shows in its place and in data-error (tests). */
function run(id, f) {
  var el = document.getElementById(id), t0 = performance.now();
  try {
    f(el);
    el.removeAttribute('data-error');
    el.setAttribute('data-ms', String(Math.round(performance.now() - t0)));
  } catch (e) {
    el.setAttribute('data-error', String(e));
    el.textContent = 'could not draw: ' + e;
  }
}
/* One tooltip for every mark (data-tip): a <title> per mark would double the nodes. */
function tooltips() {
  var tip = document.createElement('div');
  tip.id = 'tip';
  document.body.appendChild(tip);
  document.addEventListener('mousemove', function (e) {
    var s = e.target.getAttribute && e.target.getAttribute('data-tip');
    tip.style.display = s ? 'block' : 'none';
    if (!s) return;
    tip.textContent = s;
    tip.style.left = (e.clientX + 12) + 'px';
    tip.style.top = (e.clientY + 12) + 'px';
  });
}
/* Runs part f in the element id when the page has it (a page may hold only some parts). */
function part(id, f) {
  if (document.getElementById(id)) run(id, f);
}
/* ---- the controls: metric, its direction, log y, last or best, the curves' x ---- */
function controls(el) {
  function select(id, label, opts, cur) {
    return tag('label', {}, esc(label) + ' ' + tag('select', {id: id}, opts.map(function (o) {
      return tag('option', {value: o, selected: o === cur ? 'selected' : undefined}, esc(o));
    }).join('')));
  }
  var xa = xattrs().indexOf(ui.xattr) >= 0 ? ui.xattr : xattrs()[0];
  el.innerHTML = select('metric', 'metric', D.metrics, D.metrics[M]) +
    select('mode', 'better', ['max', 'min'], sign > 0 ? 'max' : 'min') +
    tag('button', {type: 'button', id: 'logy', 'aria-pressed': String(ui.logy)},
        ui.logy ? 'linear y' : 'log y') +
    select('hval', 'history of each trial\u2019s', ['last', 'best'], ui.hval) +
    select('xattr', 'curves against', xattrs(), xa);
  el.setAttribute('data-drawn', String(D.metrics.length));
}
/* ---- the summary's rows that change while a sweep runs (redraws only) ---- */
function summary(el) {
  function row(name) {
    var out = null;
    Array.prototype.forEach.call(el.querySelectorAll('tr'), function (tr) {
      var th = tr.querySelector('th');
      if (th && th.textContent === name) out = tr.querySelector('td');
    });
    return out;
  }
  var n = SN.map(function () { return 0; }), td = row('trials'), o = String(T.length) + ':';
  T.forEach(function (t) { n[t[1]]++; });
  SN.forEach(function (s, i) {
    if (n[i]) o += ' ' + tag('span', {'class': 'st', style: 'background:' + SC[i]}, esc(s)) +
      ' ' + n[i];
  });
  if (td) td.innerHTML = o;
  var b = byId[D.best], bt = row('best trial');
  if (bt && b)
    bt.innerHTML = tag('b', {}, String(b[0])) + ': ' + tag('code', {}, esc(D.metric)) + ' = ' +
      tag('b', {}, esc(fmt(b[5][0]))) + ' (' + esc(SN[b[1]]) + ' after ' + b[2] + ' iterations)';
  var cfg = row('its config');
  if (cfg && b)
    cfg.innerHTML = D.params.map(function (p, j) {
      return tag('code', {}, esc(p.name)) + ' = ' + tag('code', {}, esc(fmt(b[4][j])));
    }).join('<br>') || '(no parameters)';
  if (D.searcher && D.searcher.summary && row('searcher'))
    row('searcher').textContent = D.searcher.summary;
  if (D.searcher && row('seed'))
    row('seed').textContent = D.searcher.seed +
      (D.searcher.seed_given === false ? ' (drawn: the config gives none)' : '');
}
/* The listeners, once per page, on the containers: they act on the latest data. */
function listen() {
  var btn = document.getElementById('logx'), tbl = document.getElementById('table');
  var ctl = document.getElementById('controls'), con = document.getElementById('contour');
  if (btn)
    btn.addEventListener('click', function () {
      ui.logx = !ui.logx;
      btn.textContent = ui.logx ? 'linear x' : 'log x';
      part('curves', curves);
    });
  if (tbl)
    tbl.addEventListener('click', function (e) { if (tableDraw) tableDraw(e); });
  if (ctl) {
    ctl.addEventListener('change', function (e) {
      var id = e.target.id, v = e.target.value;
      if (id === 'metric') ui.metric = v;
      else if (id === 'mode') ui.modes[D.metrics[M]] = v;
      else if (id === 'hval') ui.hval = v;
      else if (id === 'xattr') ui.xattr = v;
      else return;
      drawAll();
    });
    ctl.addEventListener('click', function (e) {
      if (e.target.id !== 'logy') return;
      ui.logy = !ui.logy;
      drawAll();
    });
  }
  if (con)
    con.addEventListener('change', function (e) {
      if (e.target.id === 'cx') ui.cx = +e.target.value;
      else if (e.target.id === 'cy') ui.cy = +e.target.value;
      else return;
      if (ui.cx === ui.cy) ui.cy = varying().filter(function (j) { return j !== ui.cx; })[0];
      part('contour', contour);
    });
  tooltips();
}
var draws = 0;
/* Every part from the current data and choices. */
function drawAll() {
  load(D);
  part('controls', controls);
  part('legend', legend);
  part('history', history);
  part('pareto', paretoPart);
  part('hypervolume', hypervolume);
  part('importance', importance);
  part('curves', curves);
  part('scatter', scatter);
  part('contour', contour);
  part('parallel', parallel);
  part('table', table);
}
/* Draws (or redraws) every part of the page from the data document data. */
function tuneReport(data) {
  load(data);
  if (!draws++) listen();
  else part('summary', summary);
  drawAll();
  document.body.setAttribute('data-draws', String(draws));
}
window.tuneReport = tuneReport;
var embedded = document.getElementById('tune-data');
if (embedded && embedded.textContent.trim()) {
  tuneReport(JSON.parse(embedded.textContent));
  /* For the tests: milliseconds from navigation start to drawn, and to the load event. */
  document.body.setAttribute('data-render-ms', String(Math.round(performance.now())));
  window.addEventListener('load', function () {
    document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));
  });
  document.body.setAttribute('data-report', 'ready');
}
})();
