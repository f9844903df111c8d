// The infrabench HTML report's own script (embedded at build time; see reports/CMakeLists.txt):
// turns the chart specs the C++ side planned (html_planner*.cpp) into Chart.js charts, then records
// what it drew (and whether each canvas has pixels) on <body> for tests and a person reading the
// DOM. It draws what the specs say; it decides nothing about which charts a report deserves.
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var data = JSON.parse(document.getElementById('ib-data').textContent);

  // Twenty colours that stay apart (Tableau 20 order: strong ones first); past twenty, hues a
  // golden angle apart, so no two series of one chart share a colour.
  var palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf',
                 '#bcbd22', '#393b79', '#aec7e8', '#ffbb78', '#98df8a', '#ff9896', '#c5b0d5', '#c49c94',
                 '#f7b6d2', '#9edae5', '#dbdb8d', '#637939'];
  function colour(i) {
    if (i < palette.length) return palette[i];
    return 'hsl(' + Math.round((i * 137.508) % 360) + ',65%,45%)';
  }
  var GREY = '#8c959f';
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return 'n/a';
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e7 || a < 1e-3)) return v.toExponential(2);
    return Number(v.toPrecision(4)).toString();
  }
  // Diagonal grey hatching over a pale `c`: an INVALID result, visibly not a measurement to trust.
  var hatches = {};
  function hatch(c) {
    if (hatches[c]) return hatches[c];
    var p = document.createElement('canvas');
    p.width = 8; p.height = 8;
    var x = p.getContext('2d');
    x.fillStyle = '#eaeef2'; x.fillRect(0, 0, 8, 8);
    x.strokeStyle = c; x.lineWidth = 2; x.globalAlpha = 0.55;
    x.beginPath(); x.moveTo(-2, 10); x.lineTo(10, -2); x.moveTo(-2, 2); x.lineTo(2, -2); x.moveTo(6, 10); x.lineTo(10, 6); x.stroke();
    hatches[c] = x.createPattern(p, 'repeat');
    return hatches[c];
  }
  // A point's mark, {status: 'failed' | 'invalid', why: ...}, or null for a VALID result.
  function isFailed(f) { return !!f && f.status === 'failed'; }
  function flagText(f) { return (isFailed(f) ? 'FAILED' : 'INVALID') + ': ' + f.why; }
  function viridis(t) {
    var stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
    t = Math.max(0, Math.min(1, t)) * (stops.length - 1);
    var i = Math.min(stops.length - 2, Math.floor(t)), f = t - i, a = stops[i], b = stops[i + 1];
    return 'rgb(' + [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); }).join(',') + ')';
  }

  // CI95 error bars: every dataset that carries ibCi (per point [lo, hi] or null) gets a whisker
  // with caps along its value axis.
  var errorBars = {id: 'ibErrorBars', afterDatasetsDraw: function (chart) {
    var ctx = chart.ctx, horizontal = chart.options.indexAxis === 'y', drawnBars = 0, area = chart.chartArea;
    ctx.save(); ctx.strokeStyle = 'rgba(27,31,36,0.8)'; ctx.lineWidth = 1.2;
    ctx.beginPath(); ctx.rect(area.left, area.top, area.right - area.left, area.bottom - area.top); ctx.clip();
    chart.data.datasets.forEach(function (ds, i) {
      if (!ds.ibCi || !chart.isDatasetVisible(i)) return;
      var meta = chart.getDatasetMeta(i);
      var scale = chart.scales[horizontal ? meta.xAxisID : meta.yAxisID];
      meta.data.forEach(function (el, j) {
        var ci = ds.ibCi[j];
        if (!ci || el.skip) return;
        var a = scale.getPixelForValue(ci[0]), b = scale.getPixelForValue(ci[1]);
        if (!isFinite(a) || !isFinite(b)) return;
        var at = horizontal ? el.y : el.x, cap = 4;
        ctx.beginPath();
        if (horizontal) {
          ctx.moveTo(a, at); ctx.lineTo(b, at);
          ctx.moveTo(a, at - cap); ctx.lineTo(a, at + cap); ctx.moveTo(b, at - cap); ctx.lineTo(b, at + cap);
        } else {
          ctx.moveTo(at, a); ctx.lineTo(at, b);
          ctx.moveTo(at - cap, a); ctx.lineTo(at + cap, a); ctx.moveTo(at - cap, b); ctx.lineTo(at + cap, b);
        }
        ctx.stroke();
        drawnBars++;
      });
    });
    ctx.restore();
    chart.$ibErrorBars = drawnBars;  // per draw, not summed over redraws
  }};
  // A FAILED configuration has no bar: the word FAILED stands where it would be.
  var failedMarks = {id: 'ibFailed', afterDatasetsDraw: function (chart) {
    var ctx = chart.ctx, horizontal = chart.options.indexAxis === 'y', area = chart.chartArea;
    ctx.save(); ctx.fillStyle = '#cf222e'; ctx.font = 'bold 11px sans-serif';
    chart.data.datasets.forEach(function (ds, i) {
      if (!ds.ibFlags) return;
      var meta = chart.getDatasetMeta(i);
      ds.ibFlags.forEach(function (f, j) {
        if (!isFailed(f) || ds.data[j] !== null) return;
        var el = meta.data[j];
        if (!el) return;
        if (horizontal) { ctx.textAlign = 'left'; ctx.textBaseline = 'middle'; ctx.fillText('FAILED', area.left + 4, el.y); }
        else { ctx.textAlign = 'center'; ctx.textBaseline = 'bottom'; ctx.fillText('FAILED', el.x, area.bottom - 4); }
      });
    });
    ctx.restore();
  }};
  // The ratio chart's benchmarks: alternate bands (their names are heading rows on the axis).
  var groupBands = {id: 'ibGroups', beforeDatasetsDraw: function (chart) {
    var groups = chart.options.ibGroups;
    if (!groups) return;
    var ctx = chart.ctx, area = chart.chartArea, y = chart.scales.y;
    var step = groups.length && y.getPixelForValue(1) - y.getPixelForValue(0);
    ctx.save();
    groups.forEach(function (g, k) {
      var top = y.getPixelForValue(g[1]) - step / 2, bottom = y.getPixelForValue(g[1] + g[2] - 1) + step / 2;
      if (k % 2 === 0) { ctx.fillStyle = 'rgba(208,215,222,0.35)'; ctx.fillRect(area.left, top, area.right - area.left, bottom - top); }
    });
    ctx.restore();
  }};

  // A legend entry in its series' own colour, not in its first bar's (which may be hatched INVALID).
  function legendLabels(chart) {
    var labels = Chart.defaults.plugins.legend.labels.generateLabels(chart);
    labels.forEach(function (l) {
      var ds = chart.data.datasets[l.datasetIndex];
      if (ds && ds.ibColour) { l.fillStyle = ds.ibColour; l.strokeStyle = ds.ibColour; }
    });
    return labels;
  }
  function flagOf(ds, j) { return ds.ibFlags && ds.ibFlags[j] ? ' [' + flagText(ds.ibFlags[j]) + ']' : ''; }
  function ciOf(ds, j) { var c = ds.ibCi && ds.ibCi[j]; return c ? ' (95% CI ' + fmt(c[0]) + ' - ' + fmt(c[1]) + ')' : ''; }
  function base(spec, series) {
    // A legend only while it is short; a longer key is the table beside the chart (colour swatches),
    // so the plot keeps its height.
    return {animation: false, responsive: true, maintainAspectRatio: false,
            plugins: {title: {display: true, text: spec.title},
                      legend: {display: series <= 6, position: 'bottom', labels: {boxWidth: 12, generateLabels: legendLabels}}}};
  }
  // The value axis reaches the ends of the error bars, not only the values.
  function ciExtent(sets) {
    var lo = Infinity, hi = -Infinity;
    sets.forEach(function (s) {
      (s.ibCi || []).forEach(function (c) { if (c) { lo = Math.min(lo, c[0]); hi = Math.max(hi, c[1]); } });
    });
    return isFinite(hi) ? [lo, hi] : null;
  }
  // Ratio ticks outward from 1, none nearer its neighbour than a tenth of the axis, so their labels
  // never overlap, whatever the range (0.8x, 1x and 1.25x crowd an axis spanning 1000x).
  function logTicks(axis, lo, hi) {
    var nice = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.8, 1, 1.25, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
    var gap = Math.log(hi / lo) / 10, keep = [1];
    [nice.filter(function (v) { return v > 1 && v <= hi; }),
     nice.filter(function (v) { return v < 1 && v >= lo; }).reverse()].forEach(function (side) {
      var last = 1;
      side.forEach(function (v) { if (Math.abs(Math.log(v / last)) >= gap) { keep.push(v); last = v; } });
    });
    keep.sort(function (a, b) { return a - b; });
    axis.afterBuildTicks = function (a) { a.ticks = keep.map(function (v) { return {value: v}; }); };
    axis.ticks = {callback: function (v) { return fmt(v) + '\u00d7'; }};
  }
  // An INVALID point on a curve: a larger square hatched grey, as INVALID bars and cells are.
  function invalidPointStyle(f) { return f ? 'rect' : 'circle'; }
  function lineConfig(spec) {
    var labels = spec.x.labels || {};
    var n = 0;
    var sets = spec.datasets.map(function (d, i) {
      var c = d.level ? '#57606a' : colour(i);
      if (!d.level) n++;
      var flags = d.data.map(function (p) { return p.length > 3 ? p[3] : null; });
      return {label: d.label, data: d.data.map(function (p) { return {x: p[0], y: p[1]}; }), borderColor: c, backgroundColor: c,
              borderDash: d.dashed ? [6, 4] : [], tension: 0, spanGaps: true,
              pointRadius: d.level ? 0 : flags.map(function (f) { return f ? 7 : 3; }),
              pointStyle: flags.map(invalidPointStyle),
              pointBackgroundColor: flags.map(function (f) { return f ? hatch('#57606a') : c; }),
              pointBorderColor: flags.map(function (f) { return f ? GREY : c; }),
              pointBorderWidth: flags.map(function (f) { return f ? 1.5 : 1; }),
              ibCi: d.data.map(function (p) { return p.length > 2 ? p[2] : null; }), ibFlags: flags, ibColour: c};
    });
    var o = base(spec, n);
    o.scales = {
      x: {type: spec.x.log ? 'logarithmic' : 'linear', title: {display: true, text: spec.x.title},
          ticks: {callback: function (v) { var k = String(v); return labels[k] !== undefined ? labels[k] : (spec.x.log ? '' : fmt(v)); },
                  autoSkip: false, maxRotation: 60}},
      y: {title: {display: true, text: spec.y.title}, beginAtZero: !spec.y.log, type: spec.y.log ? 'logarithmic' : 'linear'}};
    var ext = ciExtent(sets);
    if (ext) { o.scales.y.suggestedMax = ext[1]; if (spec.y.log && ext[0] > 0) o.scales.y.suggestedMin = ext[0]; }
    if (spec.y.per_series) {
      // Telemetry: clocks, watts and degrees on one chart, each series on a scale of its own.
      delete o.scales.y;
      sets.forEach(function (s, i) {
        s.yAxisID = 'y' + i; s.pointRadius = 0;
        o.scales['y' + i] = {display: i < 2, position: i % 2 ? 'right' : 'left',
                             title: {display: true, text: s.label}};
      });
    }
    if (spec.x.log) {
      o.scales.x.afterBuildTicks = function (axis) {
        axis.ticks = Object.keys(labels).map(Number).filter(isFinite).sort(function (a, b) { return a - b; }).map(function (v) { return {value: v}; });
      };
    }
    o.plugins.tooltip = {callbacks: {label: function (c) {
      var k = String(c.parsed.x);
      return c.dataset.label + ': ' + fmt(c.parsed.y) + ' ' + (spec.y.unit || '') + ' at ' + (labels[k] || k) +
             ciOf(c.dataset, c.dataIndex) + flagOf(c.dataset, c.dataIndex); }}};
    return {type: 'line', data: {datasets: sets}, options: o, plugins: [errorBars]};
  }
  function barColours(spec, d, c) {
    var outliers = spec.outliers || [];
    return d.data.map(function (v, j) {
      var f = d.flags ? d.flags[j] : null;
      var own = c;
      if (spec.kind === 'nodes') own = outliers.indexOf(j) >= 0 ? '#cf222e' : '#1f77b4';
      if (spec.kind === 'ratio' && d.verdicts) {
        var w = d.verdicts[j]; own = w === 'BETTER' ? '#1a7f37' : (w === 'WORSE' ? '#cf222e' : GREY);
      }
      return f ? hatch(own === GREY ? '#57606a' : own) : own;
    });
  }
  function barConfig(spec) {
    var o = base(spec, spec.datasets.length);
    var sets = spec.datasets.map(function (d, i) {
      var c = colour(i);
      var colors = barColours(spec, d, c);
      var set = {label: d.label, data: d.data, backgroundColor: colors,
                 borderColor: colors.map(function (x, j) { return d.flags && d.flags[j] ? GREY : x; }),
                 borderWidth: d.flags ? d.flags.map(function (f) { return f ? 1.5 : 0; }) : 0,
                 type: spec.kind === 'percentiles' ? 'line' : 'bar', pointRadius: 3, spanGaps: true,
                 ibCi: d.ci || null, ibFlags: d.flags || null, ibColour: d.verdicts ? GREY : c};
      if (spec.kind === 'ratio') set.base = 1;  // a ratio bar grows from 1 (no change), up or down
      if (spec.kind === 'percentiles') {
        set.backgroundColor = c; set.borderColor = c; set.borderWidth = 2;
        var flags = d.flags || [];
        set.pointStyle = flags.map(invalidPointStyle);
        set.pointRadius = flags.map(function (f) { return f ? 7 : 3; });
        set.pointBackgroundColor = flags.map(function (f) { return f ? hatch('#57606a') : c; });
        set.pointBorderColor = flags.map(function (f) { return f ? GREY : c; });
        set.pointBorderWidth = flags.map(function (f) { return f ? 1.5 : 2; });
      }
      return set;
    });
    if (spec.kind === 'nodes' && spec.median !== undefined) {
      sets.push({label: 'median', type: 'line', data: spec.categories.map(function () { return spec.median; }),
                 borderColor: '#57606a', borderDash: [6, 4], pointRadius: 0});
    }
    var valueAxis = spec.horizontal ? 'x' : 'y', catAxis = spec.horizontal ? 'y' : 'x';
    o.indexAxis = spec.horizontal ? 'y' : 'x';
    o.scales = {};
    o.scales[valueAxis] = {title: {display: true, text: spec.y.title}, type: spec.y.log ? 'logarithmic' : 'linear',
                           beginAtZero: spec.kind !== 'ratio' && !spec.y.log};
    if (spec.y.min !== undefined) { o.scales[valueAxis].min = spec.y.min; o.scales[valueAxis].max = spec.y.max; }
    var ext = ciExtent(sets);
    if (ext && spec.kind !== 'ratio') {
      o.scales[valueAxis].suggestedMax = ext[1];
      if (spec.y.log && ext[0] > 0) o.scales[valueAxis].suggestedMin = ext[0];
    }
    if (spec.kind === 'ratio' && spec.y.log) logTicks(o.scales[valueAxis], spec.y.min, spec.y.max);
    // A ratio chart's heading rows (a benchmark and its headline metric) in bold on the axis.
    var headers = spec.headers || [];
    o.scales[catAxis] = {ticks: {autoSkip: false,
                                 font: function (c) { return {size: 11, weight: headers.indexOf(c.index) >= 0 ? 'bold' : 'normal'}; },
                                 callback: function (v) { var l = spec.categories[v] || ''; return l.length > 48 ? l.slice(0, 46) + '\u2026' : l; }}};
    if (spec.kind === 'ratio') { o.plugins.legend.display = spec.datasets.length > 1; o.ibGroups = spec.groups || null; }
    o.plugins.tooltip = {callbacks: {
      title: function (items) { return items.length ? (spec.names || spec.categories)[items[0].dataIndex] : ''; },
      label: function (c) {
        var ds = c.dataset, v = c.parsed[valueAxis];
        var verdict = ds.verdicts ? ' ' + ds.verdicts[c.dataIndex] : '';
        return ds.label + ': ' + fmt(v) + ' ' + (spec.y.unit || '') + ciOf(ds, c.dataIndex) + verdict + flagOf(ds, c.dataIndex); }}};
    sets.forEach(function (s, i) { if (spec.datasets[i] && spec.datasets[i].verdicts) s.verdicts = spec.datasets[i].verdicts; });
    return {type: 'bar', data: {labels: spec.categories, datasets: sets}, options: o,
            plugins: [errorBars, failedMarks, groupBands]};
  }
  function heatConfig(spec) {
    var vals = spec.cells.map(function (c) { return c[2]; }).filter(function (v) { return v !== null; });
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    var good = spec.better !== 'lower';
    var pts = spec.cells.map(function (c) { return {x: c[0], y: c[1], v: c[2], f: c.length > 3 ? c[3] : null}; });
    var colors = pts.map(function (p) {
      if (p.v === null) return '#d0d7de';
      var t = hi > lo ? (p.v - lo) / (hi - lo) : 1;
      return p.f ? hatch('#57606a') : viridis(good ? t : 1 - t); });
    var nx = spec.cols.length, ny = spec.rows.length;
    var o = base(spec, 0);
    o.plugins.legend.display = false;
    o.plugins.tooltip = {callbacks: {label: function (c) { var p = pts[c.dataIndex];
      return spec.rows[p.y] + ' -> ' + spec.cols[p.x] + ': ' + (p.v === null ? 'n/a' : fmt(p.v) + ' ' + (spec.y.unit || '')) +
             (p.f ? ' [' + flagText(p.f) + ']' : ''); }}};
    function cat(list) { return {stepSize: 1, autoSkip: false, callback: function (v) { return list[v] !== undefined ? list[v] : ''; }}; }
    o.scales = {x: {type: 'linear', min: -0.5, max: nx - 0.5, offset: false, title: {display: true, text: spec.x.title}, ticks: cat(spec.cols), grid: {display: false}},
                y: {type: 'linear', min: -0.5, max: ny - 0.5, reverse: true, title: {display: true, text: spec.y.title}, ticks: cat(spec.rows), grid: {display: false}}};
    var cellText = {id: 'cellText', afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx, meta = chart.getDatasetMeta(0);
      ctx.save(); ctx.font = '11px sans-serif'; ctx.textAlign = 'center'; ctx.textBaseline = 'middle';
      meta.data.forEach(function (el, i) { var p = pts[i];
        ctx.fillStyle = p.f ? '#1b1f24' : (p.v !== null && hi > lo && (good ? (p.v - lo) / (hi - lo) : (hi - p.v) / (hi - lo)) > 0.6) ? '#000' : '#fff';
        if (nx <= 16) ctx.fillText(p.v === null ? 'n/a' : fmt(p.v) + (p.f ? '?' : ''), el.x, el.y); });
      ctx.restore(); }};
    function radius(c) { var a = c.chart.chartArea; if (!a) return 8; return Math.max(3, Math.min(a.width / nx, a.height / ny) / 2 - 1); }
    return {type: 'scatter', plugins: [cellText],
            data: {datasets: [{data: pts, pointStyle: 'rect', backgroundColor: colors, borderColor: colors,
                               radius: radius, hoverRadius: radius}]},
            options: o};
  }
  // The table beside a chart is its key: each series' colour as a swatch.
  function swatches(id, chart) {
    var table = document.querySelector('table[data-for="' + id + '"]');
    if (!table) return;
    table.querySelectorAll('[data-series]').forEach(function (cell) {
      var ds = chart.data.datasets[Number(cell.getAttribute('data-series'))];
      var c = ds && (ds.ibColour || ds.borderColor);
      if (typeof c !== 'string') return;
      var s = document.createElement('span'); s.className = 'swatch'; s.style.background = c;
      cell.insertBefore(s, cell.firstChild);
    });
  }
  function canvasHasPixels(canvas) {
    try {
      var ctx = canvas.getContext('2d');
      var img = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      var painted = 0;
      for (var i = 3; i < img.length; i += 16) { if (img[i] !== 0) painted++; }
      return painted > 50;
    } catch (e) { errors.push('getImageData: ' + e.message); return false; }
  }
  // Every text a chart draws (ticks, titles, legend, our own marks), as the corners of its box on
  // the canvas, rotation included: the last drawing's, so labels drawn over one another can be
  // found at the width the page was opened at.
  function recordTexts(canvas, cfg) {
    var ctx = canvas.getContext('2d'), fill = ctx.fillText;
    canvas.$ibTexts = [];
    ctx.fillText = function (text, x, y, maxWidth) {
      var s = String(text);
      if (s.trim()) {
        var m = this.measureText(s), t = this.getTransform();
        var right = maxWidth !== undefined ? Math.min(m.actualBoundingBoxRight, maxWidth) : m.actualBoundingBoxRight;
        var box = [[x - m.actualBoundingBoxLeft, y - m.actualBoundingBoxAscent], [x + right, y - m.actualBoundingBoxAscent],
                   [x + right, y + m.actualBoundingBoxDescent], [x - m.actualBoundingBoxLeft, y + m.actualBoundingBoxDescent]];
        canvas.$ibTexts.push({text: s, corners: box.map(function (p) {
          return [t.a * p[0] + t.c * p[1] + t.e, t.b * p[0] + t.d * p[1] + t.f]; })});
      }
      return fill.apply(this, arguments);
    };
    (cfg.plugins = cfg.plugins || []).push({id: 'ibTexts', beforeDraw: function () { canvas.$ibTexts = []; }});
  }
  // Whether two convex boxes (corner lists) overlap by more than a pixel: no edge direction of
  // either separates them (the separating axis test, so rotated tick labels are judged as drawn).
  function boxesOverlap(a, b) {
    var polys = [a, b];
    for (var k = 0; k < 2; k++) {
      var p = polys[k];
      for (var i = 0; i < p.length; i++) {
        var q = p[(i + 1) % p.length], nx = q[1] - p[i][1], ny = p[i][0] - q[0], len = Math.hypot(nx, ny);
        if (!len) continue;
        nx /= len; ny /= len;
        var ea = a.map(function (c) { return c[0] * nx + c[1] * ny; }), eb = b.map(function (c) { return c[0] * nx + c[1] * ny; });
        if (Math.min(Math.max.apply(null, ea), Math.max.apply(null, eb)) -
            Math.max(Math.min.apply(null, ea), Math.min.apply(null, eb)) <= 1) return false;
      }
    }
    return true;
  }
  // A chart's drawn bars as boxes in the canvas's pixels.
  function barBoxes(chart) {
    var out = [], r = chart.currentDevicePixelRatio || 1;
    chart.data.datasets.forEach(function (ds, i) {
      var meta = chart.getDatasetMeta(i);
      if (meta.type !== 'bar' || !chart.isDatasetVisible(i)) return;
      meta.data.forEach(function (el, j) {
        if (ds.data[j] === null || ds.data[j] === undefined) return;
        var p = el.getProps(['x', 'y', 'base', 'width', 'height', 'horizontal'], true);
        var x0 = p.horizontal ? Math.min(p.base, p.x) : p.x - p.width / 2, x1 = p.horizontal ? Math.max(p.base, p.x) : p.x + p.width / 2;
        var y0 = p.horizontal ? p.y - p.height / 2 : Math.min(p.base, p.y), y1 = p.horizontal ? p.y + p.height / 2 : Math.max(p.base, p.y);
        out.push([[x0 * r, y0 * r], [x1 * r, y0 * r], [x1 * r, y1 * r], [x0 * r, y1 * r]]);
      });
    });
    return out;
  }
  // Labels drawn over one another or over a bar, per chart.
  var labelCount = 0;
  function labelOverlaps() {
    var found = [];
    document.querySelectorAll('canvas[data-chart]').forEach(function (canvas) {
      var texts = canvas.$ibTexts || [], chart = typeof Chart !== 'undefined' && Chart.getChart(canvas);
      var bars = chart ? barBoxes(chart) : [], id = canvas.getAttribute('data-chart');
      labelCount += texts.length;
      for (var i = 0; i < texts.length; i++) {
        for (var j = i + 1; j < texts.length; j++) {
          if (boxesOverlap(texts[i].corners, texts[j].corners)) found.push(id + ': "' + texts[i].text + '" over "' + texts[j].text + '"');
        }
        for (var k = 0; k < bars.length; k++) {
          if (boxesOverlap(texts[i].corners, bars[k])) { found.push(id + ': "' + texts[i].text + '" over a bar'); break; }
        }
      }
    });
    return found;
  }
  // Tables wider than what holds them (the page, or the box beside a chart): a reader would
  // scroll sideways to read the status. Closed <details> are opened while measuring, as a
  // reader opening them would see them.
  function overflowingTables() {
    var found = [], closed = [].slice.call(document.querySelectorAll('details:not([open])'));
    closed.forEach(function (d) { d.open = true; });
    document.querySelectorAll('table').forEach(function (t) {
      var holder = t.parentElement;
      while (holder !== document.body && getComputedStyle(holder).overflowX === 'visible') holder = holder.parentElement;
      var room = holder.getBoundingClientRect().right - parseFloat(getComputedStyle(holder).paddingRight);
      if (t.scrollWidth > t.clientWidth + 1 || t.getBoundingClientRect().right > room + 1) {
        var what = t.getAttribute('data-for') || (t.querySelector('th') || t).textContent.slice(0, 40);
        found.push(what + ' (' + Math.round(Math.max(t.scrollWidth, t.getBoundingClientRect().width)) + ' px in ' +
                   Math.round(holder.clientWidth) + ')');
      }
    });
    closed.forEach(function (d) { d.open = false; });
    return found;
  }
  var expected = 0, drawn = 0, nonblank = 0, errorBarCount = 0, flagged = 0;
  function countFlags(spec) {
    (spec.datasets || []).forEach(function (d) {
      (d.flags || []).forEach(function (f) { if (f) flagged++; });
      (d.data || []).forEach(function (p) { if (Array.isArray(p) && p.length > 3 && p[3]) flagged++; });
    });
    (spec.cells || []).forEach(function (c) { if (c.length > 3 && c[3]) flagged++; });
  }
  document.querySelectorAll('canvas[data-chart]').forEach(function (canvas) {
    expected++;
    var spec = data.charts[canvas.getAttribute('data-chart')];
    try {
      if (typeof Chart === 'undefined') throw new Error('Chart.js is not loaded');
      var cfg = spec.kind === 'line' ? lineConfig(spec) : spec.kind === 'heatmap' ? heatConfig(spec) : barConfig(spec);
      recordTexts(canvas, cfg);
      var chart = new Chart(canvas, cfg);
      swatches(spec.id, chart);
      countFlags(spec);
      errorBarCount += chart.$ibErrorBars || 0;
      drawn++;
      if (canvasHasPixels(canvas)) { nonblank++; canvas.setAttribute('data-rendered', 'true'); }
    } catch (e) {
      errors.push(spec.id + ': ' + e.message);
      console.error('infrabench chart ' + spec.id + ': ' + e.message);
      var p = document.createElement('p'); p.className = 'error'; p.textContent = 'chart failed: ' + e.message;
      canvas.parentNode.appendChild(p);
    }
  });
  document.body.setAttribute('data-charts-expected', String(expected));
  document.body.setAttribute('data-charts-drawn', String(drawn));
  document.body.setAttribute('data-charts-nonblank', String(nonblank));
  // What a test (or a person reading the DOM) can check was drawn: CI whiskers, and points marked
  // INVALID or FAILED.
  document.body.setAttribute('data-error-bars', String(errorBarCount));
  document.body.setAttribute('data-flagged', String(flagged));
  // The page's layout at this width: tables that do not fit, chart labels drawn over each other.
  var wide = overflowingTables(), over = labelOverlaps();
  document.body.setAttribute('data-width', String(window.innerWidth));
  document.body.setAttribute('data-table-overflow', String(wide.length));
  if (wide.length) document.body.setAttribute('data-table-overflow-text', wide.slice(0, 8).join(' | '));
  document.body.setAttribute('data-labels', String(labelCount));
  document.body.setAttribute('data-label-overlaps', String(over.length));
  if (over.length) document.body.setAttribute('data-label-overlap-text', over.slice(0, 8).join(' | '));
  document.body.setAttribute('data-errors', String(errors.length));
  if (errors.length) document.body.setAttribute('data-error-text', errors.join(' | '));
  document.body.setAttribute('data-render-done', 'true');
})();
