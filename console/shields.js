// SPDX-License-Identifier: Apache-2.0
// The admin console's site-wide shields (issue 27): the banner every view
// shows while a shield is raised, the Shields view with its switch, and
// the Overview's charts, drawn here as inline SVG (the page loads nothing
// from another origin). Loaded before app.js, whose helpers ($, el, api,
// refusal, ...) these functions call, and whose start() wires them; both
// are classic scripts sharing one global scope. As in app.js, data
// reaches the page as text only.
'use strict';

// ---- shields ----

// How often the banner asks for the shields, and the overview redraws.
const SHIELDS_POLL_MS = 5000;
const OVERVIEW_POLL_MS = 15000;

let shields = [];

// A number as the page shows it: integers as they are, others to one
// decimal.
function num(x) {
  return Number.isInteger(x) ? String(x) : x.toFixed(1);
}

// An RFC 3339 time as "2026-12-03 14:02:11 UTC", in a <time> element.
function when(iso) {
  return el('time', {datetime: iso},
            iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC'));
}

function sourceText(s) {
  return s.source === 'shared' ? 'every instance (Redis)'
                               : 'this instance only: Redis does not answer';
}

// A raised shield's figures, in one sentence.
function raisedText(s) {
  const what = s.counts === 'failures' ? 'failed logins' : 'checks';
  return [s.name + ' is raised since ', when(s.since), ' until ',
          when(s.until), ': ' + num(s.rate) + ' ' + what + ' in the last ' +
          s.window_s + ' s window, ' + num(s.current) + ' in this one ' +
          '(baseline ' + num(s.baseline) + ', threshold ' +
          num(s.threshold) + '); untrusted ' + s.endpoint + ' checks get ' +
          (s.action === 'challenge' ? 'a challenge' : 'denied') +
          (s.mode === 'shadow' ? ' (shadow: noted only)' : '') +
          '; counted by ' + sourceText(s) + '. '];
}

function renderBanner() {
  const up = shields.filter((s) => s.raised);
  $('banner-list').replaceChildren(...up.map((s) => el(
      'li', {'data-shield': s.name}, ...raisedText(s),
      rowButton('Lower', s.name, () => lowerShield(s.name)))));
  $('shield-banner').hidden = up.length === 0 || !signedIn();
}

function shieldRow(s) {
  const actions = el('td', {class: 'actions'});
  if (s.raised)
    actions.append(rowButton('Lower', s.name, () => lowerShield(s.name)));
  return el('tr', {'data-shield': s.name},
            el('th', {scope: 'row'}, s.name),
            el('td', {class: s.raised ? 'denied' : ''},
               s.raised ? 'raised until ' + s.until.replace('T', ' ')
                                                  .replace(/\.\d+Z$/, ' UTC')
                        : 'lowered'),
            el('td', {class: 'num'}, num(s.rate)),
            el('td', {class: 'num'}, num(s.current)),
            el('td', {class: 'num'}, num(s.baseline)),
            el('td', {class: 'num'}, num(s.threshold)),
            el('td', {}, s.source),
            actions);
}

function renderShields() {
  $('shields-body').replaceChildren(...shields.map(shieldRow));
  const select = $('raise-policy');
  const kept = select.value;
  select.replaceChildren(...shields.map(
      (s) => el('option', {value: s.name}, s.name)));
  if (shields.some((s) => s.name === kept)) select.value = kept;
}

// Reads the shields: the banner on every view, the table on its own. A
// poll that fails says nothing (report false): the next one tries again,
// and the shields view's own call reports what is wrong.
async function loadShields(report) {
  if (!signedIn()) return;
  try {
    const res = await api('GET', 'shields');
    shields = res.body.shields || [];
  } catch (err) {
    if (report) refusal(err);
    return;
  }
  renderBanner();
  renderShields();
}

async function switchShield(name, body, done) {
  try {
    const res = await api('POST', 'shields/' + encodeURIComponent(name), body);
    statusMsg(done);
    return res;
  } catch (err) {
    refusal(err, body.raise_for_s !== undefined ? $('raise-form') : null);
    return null;
  } finally {
    await loadShields(false);
  }
}

function lowerShield(name) {
  return switchShield(name, {lower: true}, 'Lowered ' + name + '.');
}

function onRaise(ev) {
  ev.preventDefault();
  const input = $('raise-for');
  input.removeAttribute('aria-invalid');
  const name = $('raise-policy').value;
  const text = input.value.trim();
  const secs = /^\d+$/.test(text) ? Number(text) : text;
  switchShield(name, {raise_for_s: secs},
               'Raised ' + name + ' for ' + text + ' s.');
}

// The banner's poll: one at a time, from sign-in to sign-out.
let shieldsPolling = false;
let shieldsTimer = null;

function pollShields() {
  clearTimeout(shieldsTimer);
  loadShields(false).finally(() => {
    if (shieldsPolling && signedIn())
      shieldsTimer = setTimeout(pollShields, SHIELDS_POLL_MS);
    else
      shieldsPolling = false;
  });
}

function startShieldsPoll() {
  if (shieldsPolling) return;
  shieldsPolling = true;
  pollShields();
}

// ---- overview ----

const SVG_NS = 'http://www.w3.org/2000/svg';
const CHART = {w: 720, h: 200, left: 48, right: 12, top: 12, bottom: 26};

// Builds an SVG element, as el builds an HTML one.
function svgEl(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {}))
    if (v !== null && v !== undefined) e.setAttribute(k, String(v));
  for (const c of children)
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

const sum = (xs) => xs.reduce((a, x) => a + (x || 0), 0);

// "14:02" of an RFC 3339 minute.
const hhmm = (iso) => iso.slice(11, 16);

// What a series' legend says of it: counts add up over the hour; levels
// (a shield's count per window, baseline, threshold) do not, and say
// their latest value and their peak.
function legendText(s, counts) {
  const v = s.values.filter((x) => x !== null);
  if (counts) return s.label + ' (' + num(sum(v)) + ' in the hour)';
  if (!v.length) return s.label + ' (no sample)';
  return s.label + ' (now ' + num(v[v.length - 1]) + ', peak ' +
         num(Math.max(...v)) + ')';
}

// A line chart of series ({label, values, kind}) over minutes, with the
// minutes flagged in shaded drawn behind (shaded null: the series are
// counts, else levels); nulls break a line. Drawn as inline SVG by this
// script: the page loads nothing from elsewhere.
function lineChart(title, minutes, series, shaded) {
  const {w, h, left, right, top, bottom} = CHART;
  const all = series.flatMap((s) => s.values.filter((v) => v !== null));
  const max = Math.max(1, ...all);
  const x = (i) => left + i * (w - left - right) / (minutes.length - 1);
  const y = (v) => h - bottom - v / max * (h - top - bottom);
  const last = series.map((s) => {
    const v = s.values.filter((v) => v !== null);
    return s.label + ' ' + (v.length ? num(v[v.length - 1]) : 'none');
  }).join(', ');
  const svg = svgEl('svg', {viewBox: '0 0 ' + w + ' ' + h, role: 'img',
                            'aria-label': title + '; last minute: ' + last,
                            class: 'chart'});
  (shaded || []).forEach((on, i) => {
    if (on)
      svg.append(svgEl('rect', {x: x(i) - 3, y: top, width: 6,
                                height: h - top - bottom, class: 'raised'}));
  });
  svg.append(
      svgEl('line', {x1: left, y1: h - bottom, x2: w - right, y2: h - bottom,
                     class: 'axis'}),
      svgEl('line', {x1: left, y1: top, x2: left, y2: h - bottom,
                     class: 'axis'}),
      svgEl('text', {x: left - 6, y: top + 4, class: 'tick end'}, num(max)),
      svgEl('text', {x: left - 6, y: h - bottom, class: 'tick end'}, '0'),
      svgEl('text', {x: left, y: h - 8, class: 'tick'}, hhmm(minutes[0])),
      svgEl('text', {x: w - right, y: h - 8, class: 'tick end'},
            hhmm(minutes[minutes.length - 1]) + ' UTC'));
  series.forEach((s, k) => {
    let d = '';
    let pen = false;
    s.values.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      d += (pen ? ' L' : ' M') + x(i).toFixed(1) + ' ' + y(v).toFixed(1);
      pen = true;
    });
    const kind = s.kind || 's' + k % 8;
    svg.append(svgEl('path', {d: d.trim() || 'M0 0',
                              class: 'series ' + kind,
                              'data-series': s.label,
                              'data-points': s.values.length},
                     svgEl('title', {}, s.label)));
    // A minute alone between gaps draws no line: a dot marks it.
    s.values.forEach((v, i) => {
      const alone = v !== null && (i === 0 || s.values[i - 1] === null) &&
                    (i === s.values.length - 1 || s.values[i + 1] === null);
      if (alone)
        svg.append(svgEl('circle', {cx: x(i).toFixed(1), cy: y(v).toFixed(1),
                                    r: 3, class: 'dot ' + kind}));
    });
  });
  const legend = el('ul', {class: 'legend'}, ...series.map((s, k) => el(
      'li', {}, el('span', {class: 'swatch ' + (s.kind || 's' + k % 8),
                            'aria-hidden': 'true'}),
      legendText(s, !shaded))));
  if (shaded && shaded.some((v) => v))
    legend.append(el('li', {}, el('span', {class: 'swatch raised',
                                           'aria-hidden': 'true'}),
                      'raised'));
  return el('figure', {class: 'chart'}, el('figcaption', {}, title), svg,
            legend);
}

// A chart of one series per policy that has any of kind in the hour, or
// a sentence saying there were none.
function policyChart(title, doc, kind, none) {
  const series = doc.policies.filter((p) => sum(p[kind]) > 0)
                             .map((p) => ({label: p.policy, values: p[kind]}));
  if (!series.length)
    return el('figure', {class: 'chart'}, el('figcaption', {}, title),
              el('p', {class: 'hint'}, none));
  return lineChart(title, doc.minutes, series);
}

function drawOverview(doc) {
  const outcomes = ['allowed', 'denied', 'unavailable', 'invalid'];
  const checks = outcomes.map((o) => ({
    label: o,
    values: doc.minutes.map((_, i) => sum(doc.checks.map((c) => c[o][i]))),
  }));
  const charts = [
    lineChart('Checks per minute, every endpoint, by outcome', doc.minutes,
              checks),
    policyChart('Challenges asked for per minute, by policy', doc,
                'challenged', 'No challenge in the last hour.'),
    policyChart('Denials per minute, by policy', doc, 'denied',
                'No denial in the last hour.'),
  ];
  for (const s of doc.shields) {
    charts.push(lineChart(
        'Shield ' + s.policy + ': its count per window against its ' +
            'baseline and threshold (peak of each minute)',
        doc.minutes,
        [{label: 'count', values: s.count, kind: 'count'},
         {label: 'baseline', values: s.baseline, kind: 'baseline'},
         {label: 'threshold', values: s.threshold, kind: 'threshold'}],
        s.raised.map((v) => v === true)));
  }
  $('overview-charts').replaceChildren(...charts);
  $('overview-fleet').textContent = fleetLine(doc.fleet);
  $('overview-updated').textContent =
      'Up to ' + doc.minutes[doc.minutes.length - 1].replace('T', ' ')
                     .replace(/:00\.000Z$/, ' UTC') + ' (this minute so far).';
}

// The fleet in one sentence: its version, this instance's, and the
// instances behind it (GET /admin/fleet has the rest).
function fleetLine(f) {
  if (!f || f.state === 'off')
    return 'This instance is in no fleet (--fleet off).';
  const head = f.version === null ? 'cannot be reached' :
      'is at version ' + f.version;
  let text = 'Fleet ' + f.name + ' ' + head + '; this instance is at ' +
      f.instance_version + ' (' + f.state + ').';
  if (f.lagging.length)
    text += ' Behind: ' + f.lagging.map((m) => m.host + ' ' + m.id +
                                        ' at ' + m.version + ' (' + m.state +
                                        ')').join(', ') + '.';
  else
    text += ' No instance is behind.';
  return text;
}

async function loadOverview() {
  try {
    const res = await api('GET', 'overview');
    drawOverview(res.body);
  } catch (err) {
    refusal(err);
  }
}

let overviewTimer = null;

function pollOverview() {
  clearTimeout(overviewTimer);
  if (location.hash !== '#overview' || !signedIn()) return;
  loadOverview().finally(() => {
    if (location.hash === '#overview')
      overviewTimer = setTimeout(pollOverview, OVERVIEW_POLL_MS);
  });
}
