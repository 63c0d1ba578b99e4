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
(function () {
'use strict';
/* The data of the latest tuneReport(D) call, and what is derived from it. */
var D, T, NP, SN, SC, sign, byId;
function load(data) {
  D = data;
  T = D.trials;
  NP = D.params.length;
  SN = D.statuses.map(function (s) { return s[0]; });
  SC = D.statuses.map(function (s) { return s[1]; });
  sign = D.mode === 'min' ? -1 : 1;
  byId = {};
  T.forEach(function (t) { byId[t[0]] = t; });
}
/* A trial row: [id, status, iterations, time_total_s, [params], [metrics], error]. */
function final(t) { return t[5][0]; }
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
  if (D.best >= 0) o += entry('bestkey', undefined, 'best: trial ' + D.best);
  if (D.rungs.length) o += entry('rungkey', undefined, 'ASHA rung');
  el.innerHTML = o;
}
/* ---- learning curves: D.curves has [id, iteration, value, iteration, value, ...] ---- */
function curves(el, logx) {
  var C = D.curves, xv = [], yv = [], drawn = 0, best = null, ends = '';
  C.forEach(function (c) {
    for (var i = 1; i + 1 < c.length; i += 2) { xv.push(c[i]); yv.push(c[i + 1]); }
  });
  if (!C.length) return nodata(el, 'No trial reported ' + D.metric + '.');
  D.rungs.forEach(function (r) { xv.push(r); });
  var w = width(el), h = 420, m = {l: 64, r: 16, t: 24, b: 42};
  var xs = scale(logx ? 'log' : 'lin', xv, m.l, w - m.r);
  var ys = scale('lin', yv, h - m.b, m.t);
  var o = axes(xs, ys, w, h, m, D.time_attr + (logx ? ' (log)' : ''), D.metric);
  D.rungs.forEach(function (r) {
    var x = xs.f(r);
    if (!isNaN(x))
      o += line(x, m.t, x, h - m.b, 'rung') + text(x + 3, m.t - 6, 'rung ' + fmt(r), 'tk');
  });
  function path(c, t, cls) {
    var d = '', pen = 'M', lx = NaN, ly = NaN, s = t ? t[1] : 0;
    for (var i = 1; i + 1 < c.length; i += 2) {
      var x = xs.f(c[i]), y = ys.f(c[i + 1]);
      if (isNaN(x) || isNaN(y)) { pen = 'M'; continue; }
      d += pen + r1(x) + ' ' + r1(y);
      pen = 'L';
      lx = x;
      ly = y;
    }
    if (!d) return '';
    if (d.indexOf('L') < 0) d += 'h0.01';
    /* A dot where a trial stopped early or failed: it ends at its rung. */
    if (SN[s] === 'STOPPED' || SN[s] === 'ERROR')
      ends += tag('circle', {'class': 'end', cx: r1(lx), cy: r1(ly), r: 2.5, fill: SC[s]});
    drawn++;
    var tip = 'trial ' + c[0] + ' (' + SN[s] + ')';
    if (t) tip += ': ' + fmt(final(t)) + ' after ' + t[2];
    return tag('path', {'class': cls, stroke: SC[s], d: d, 'data-tip': tip});
  }
  var g = '';
  C = C.slice().sort(function (a, b) { return byScore(byId[a[0]], byId[b[0]]); });
  C.forEach(function (c) {
    if (c[0] === D.best) best = c;
    else g += path(c, byId[c[0]], 'cv');
  });
  o += tag('g', {'stroke-opacity': opacity(C.length)}, g) + ends;
  if (best) o += path(best, byId[best[0]], 'cv best');
  el.innerHTML = svg(w, h, o, drawn);
  el.setAttribute('data-drawn', String(drawn));
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
  if (!withm.length) return nodata(el, 'No trial reported ' + D.metric + '.');
  /* Four plots a row when they fit at 240 px or more (8 px gaps). */
  var cw = width(el), per = Math.max(1, Math.min(4, Math.floor((cw + 8) / 248)));
  var w = Math.min(340, Math.floor((cw + 8) / per) - 8), h = 230;
  var m = {l: 58, r: 12, t: 12, b: 40};
  var ys = scale('lin', withm.map(final), h - m.b, m.t);
  D.params.forEach(function (p, j) {
    var xs = paramScale(j, m.l, w - m.r), n = 0, bo = '';
    if (!xs) return consts.push(p.name + ' = ' + fmt(T.length ? T[0][4][j] : ''));
    var o = axes(xs, ys, w, h, m, p.name + (xs.kind === 'log' ? ' (log)' : ''), D.metric);
    withm.forEach(function (t) {
      var x = xs.f(t[4][j]), y = ys.f(final(t)), b = t[0] === D.best;
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
/* ---- parallel coordinates: one axis per varying parameter, then the metric ---- */
function parallel(el) {
  var axs = [], j;
  for (j = 0; j < NP; j++) if (paramKind(D.params[j], j)) axs.push(j);
  axs.push(-1);
  var withm = T.filter(function (t) { return fin(final(t)); }).sort(byScore);
  if (!withm.length) return nodata(el, 'No trial reported ' + D.metric + '.');
  var gap = 130, m = {l: 60, r: 60, t: 20, b: 56}, h = 380;
  var w = Math.max(width(el), m.l + m.r + gap * (axs.length - 1));
  if (axs.length > 1) gap = (w - m.l - m.r) / (axs.length - 1);
  var sc = axs.map(function (j) {
    if (j >= 0) return paramScale(j, h - m.b, m.t);
    /* Better at the top whatever the mode. */
    var f = withm.map(final);
    return sign > 0 ? scale('lin', f, h - m.b, m.t) : scale('lin', f, m.t, h - m.b);
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
    var name = j < 0 ? D.metric : D.params[j].name + (s.kind === 'log' ? ' (log)' : '');
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
    var cls = t[0] === D.best ? 'pc best' : 'pc';
    var tip = 'trial ' + t[0] + ': ' + fmt(final(t));
    var p = tag('path', {'class': cls, stroke: SC[t[1]], d: d, 'data-tip': tip});
    if (t[0] === D.best) bo = p;
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
  var order = T.slice(), sortCol = 3 + NP, dir = -sign, last = cols.length - 1;
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
      return tag('tr', {'class': t[0] === D.best ? 'best' : undefined}, cells);
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
var logx = false;
function drawCurves(el) { curves(el, logx); }
/* The listeners, once per page: they act on the latest data. */
function listen() {
  var btn = document.getElementById('logx'), tbl = document.getElementById('table');
  if (btn)
    btn.addEventListener('click', function () {
      logx = !logx;
      btn.textContent = logx ? 'linear x' : 'log x';
      part('curves', drawCurves);
    });
  if (tbl)
    tbl.addEventListener('click', function (e) { if (tableDraw) tableDraw(e); });
  tooltips();
}
var draws = 0;
/* Draws (or redraws) every part of the page from the data document data. */
function tuneReport(data) {
  load(data);
  if (!draws++) listen();
  part('legend', legend);
  part('curves', drawCurves);
  part('scatter', scatter);
  part('parallel', parallel);
  part('table', table);
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
