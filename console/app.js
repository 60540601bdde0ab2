// SPDX-License-Identifier: Apache-2.0
// The abuseguard admin console: plain DOM code over the admin API, no
// framework and no build step. Every value from the API reaches the page
// as text (textContent, option values), never as markup: the page's
// Content-Security-Policy requires Trusted Types, so any innerHTML would
// throw. The token lives in this tab's sessionStorage only.
'use strict';

const TOKEN_KEY = 'abuseguard.admin_token';
// API paths relative to /admin/ui/, so that the console also works behind
// a proxy that mounts the service under a prefix.
const API = '../';
const AUDIT_PAGE = 20;
// A field the edit form offers although a record may lack it: min_ratio
// is in a record only when its algorithm is conversion.
const OPTIONAL_FIELDS = ['min_ratio'];

const $ = (id) => document.getElementById(id);

// Builds an element: attrs are attributes (a false or null one is left
// out), children strings (as text nodes) or nodes.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function button(text, onClick, attrs) {
  const b = el('button', Object.assign({type: 'button'}, attrs), text);
  b.addEventListener('click', onClick);
  return b;
}

// A button repeated on every row of a table: its accessible name is its
// text and what the row is ("Edit login.ip"), so that a screen reader's
// list of buttons tells the rows apart; the name starts with the visible
// text, so that speech input finds it by what it shows.
function rowButton(text, what, onClick) {
  return button(text, onClick, {'aria-label': text + ' ' + what});
}

function show(node, text) {
  node.textContent = text;
  node.hidden = !text;
}

// One message at a time: an error (role alert) or a confirmation (role
// status); showing one clears the other.
function alertMsg(text) {
  show($('status'), '');
  show($('alert'), text);
}

function statusMsg(text) {
  show($('alert'), '');
  show($('status'), text);
}

function clearMsgs() {
  show($('alert'), '');
  show($('status'), '');
}

class ApiError extends Error {
  constructor(status, body) {
    const msg = body && typeof body.error === 'string' ? body.error
                                                         : 'HTTP ' + status;
    super(msg);
    this.status = status;
    this.field = body && typeof body.field === 'string' ? body.field : null;
  }
}

// One admin API call with the stored token. Resolves to {status, body}
// for a 2xx, rejects with an ApiError otherwise; a 401 also signs out, as
// the token no longer opens anything.
async function api(method, path, body, token) {
  const headers = {Authorization: 'Bearer ' +
                   (token || sessionStorage.getItem(TOKEN_KEY) || '')};
  const init = {method, headers, cache: 'no-store', credentials: 'omit'};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(API + path, init);
  let parsed = null;
  const text = await r.text();
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      parsed = null;
    }
  }
  if (!r.ok) {
    const err = new ApiError(r.status, parsed);
    if (r.status === 401 && !token) signOut(err.message);
    throw err;
  }
  return {status: r.status, body: parsed};
}

// A refusal, shown as the API worded it (its message names the field);
// the field itself, when the form has one of that name, is marked and
// focused.
function refusal(err, form) {
  if (!(err instanceof ApiError)) {
    alertMsg('The service did not answer: ' + err.message);
    return;
  }
  if (err.status === 401) return;  // signOut has said why
  let text = err.message;
  if (err.status === 429) text = 'Too many failed sign-ins: ' + text;
  alertMsg(text + (err.field ? ' (field: ' + err.field + ')' : ''));
  if (form && err.field) {
    const input = form.elements.namedItem(err.field);
    if (input && input.focus) {
      input.setAttribute('aria-invalid', 'true');
      input.focus();
    }
  }
}

// A 202 answer: committed or done, with a message saying what is not.
function accepted(res, done) {
  if (res.status === 202 && res.body && res.body.message)
    return done + ' (' + res.body.message + ')';
  return done;
}

// ---- sign in ----

function signedIn() {
  return !!sessionStorage.getItem(TOKEN_KEY);
}

function signOut(why) {
  sessionStorage.removeItem(TOKEN_KEY);
  shieldsPolling = false;
  clearTimeout(shieldsTimer);
  clearTimeout(overviewTimer);
  $('shield-banner').hidden = true;
  $('nav').hidden = true;
  for (const v of Object.values(VIEWS)) $(v.section).hidden = true;
  $('signin').hidden = false;
  $('token').value = '';
  if (why) alertMsg('Signed out: ' + why);
  else clearMsgs();
  $('token').focus();
}

async function onSignIn(ev) {
  ev.preventDefault();
  const token = $('token').value.trim();
  if (!token) {
    alertMsg('Admin token is required');
    return;
  }
  try {
    // Any admin route checks the token; the policies are needed next.
    await api('GET', 'policies', undefined, token);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401)
      alertMsg('The admin token was refused: ' + err.message);
    else
      refusal(err);
    $('token').select();
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  $('token').value = '';
  clearMsgs();
  $('signin').hidden = true;
  $('nav').hidden = false;
  route();
}

// ---- policies ----

let policies = [];

// The record to send back: the API's own, less what it adds when listing.
function record(p) {
  const r = Object.assign({}, p);
  delete r.invalid;
  return r;
}

function policyRow(p) {
  const tr = el('tr', {'data-policy': p.name});
  tr.append(el('th', {scope: 'row'}, p.name));
  if (p.invalid && !p.endpoint) {
    tr.append(el('td', {colspan: 7, class: 'denied'},
                 'invalid, not in force: ' + p.invalid));
    tr.append(el('td', {}, rowButton('Edit', p.name, () => openEdit(p))));
    return tr;
  }
  tr.append(el('td', {}, p.endpoint),
            el('td', {}, (p.key || []).join(', ')),
            el('td', {}, p.algorithm),
            el('td', {class: 'num'}, p.limit),
            el('td', {class: 'num'}, p.window_s + ' s'),
            el('td', {}, p.mode),
            el('td', {}, p.enabled ? 'yes' : 'no'));
  const actions = el('td', {class: 'actions'});
  actions.append(
      rowButton('Edit', p.name, () => openEdit(p)),
      rowButton(p.mode === 'shadow' ? 'Switch to enforce' : 'Switch to shadow',
                p.name,
                () => save(p.name, Object.assign(record(p), {
                             mode: p.mode === 'shadow' ? 'enforce' : 'shadow'
                           }), null)),
      rowButton(p.enabled ? 'Disable' : 'Enable', p.name,
                () => save(p.name,
                           Object.assign(record(p), {enabled: !p.enabled}),
                           null)));
  if (p.invalid)
    actions.append(el('p', {class: 'denied'},
                      'stored row invalid: ' + p.invalid));
  tr.append(actions);
  return tr;
}

function renderPolicies() {
  $('policies-body').replaceChildren(...policies.map(policyRow));
}

async function loadPolicies() {
  try {
    const res = await api('GET', 'policies');
    policies = res.body.policies || [];
    renderPolicies();
  } catch (err) {
    refusal(err);
  }
}

// PUTs the whole record; on success the table shows what the API kept.
async function save(name, body, form) {
  try {
    const res = await api('PUT', 'policies/' + encodeURIComponent(name),
                          body);
    const kept = res.body.policy;
    const i = policies.findIndex((p) => p.name === name);
    if (i >= 0) policies[i] = kept;
    else policies.push(kept);
    renderPolicies();
    if (form) $('edit-form').hidden = true;
    statusMsg(accepted(res, 'Saved ' + name + ': mode ' + kept.mode +
                       ', ' + (kept.enabled ? 'enabled' : 'disabled') +
                       ', limit ' + kept.limit + ' per ' + kept.window_s +
                       ' s'));
  } catch (err) {
    refusal(err, form);
  }
}

let editing = null;

function fieldInput(name, value) {
  const id = 'edit-' + name;
  const label = el('label', {for: id}, name);
  let input;
  if (typeof value === 'boolean') {
    input = el('input', {id, name, type: 'checkbox', checked: value});
  } else {
    const text = Array.isArray(value) ? value.join(', ')
               : value === undefined || value === null ? '' : String(value);
    input = el('input', {id, name, type: 'text', autocomplete: 'off',
                         spellcheck: 'false'});
    input.value = text;
  }
  input.dataset.kind = Array.isArray(value) ? 'list'
                     : value === undefined ? 'optional'
                     : typeof value;
  return [label, input];
}

function openEdit(p) {
  editing = p.name;
  clearMsgs();
  const rec = record(p);
  const fields = [];
  for (const [k, v] of Object.entries(rec))
    if (k !== 'name') fields.push(...fieldInput(k, v));
  for (const k of OPTIONAL_FIELDS)
    if (!(k in rec)) fields.push(...fieldInput(k, undefined));
  $('edit-fields').replaceChildren(...fields);
  $('edit-h').textContent = 'Edit ' + p.name;
  $('edit-form').hidden = false;
  $('edit-h').focus();
}

// A number field's text: a number when it reads as one, else the text
// itself, for the API to refuse naming the field.
function numberOrText(text) {
  return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

function onSave(ev) {
  ev.preventDefault();
  const form = $('edit-form');
  const body = {name: editing};
  for (const input of form.querySelectorAll('input')) {
    input.removeAttribute('aria-invalid');
    const text = input.value.trim();
    switch (input.dataset.kind) {
    case 'boolean':
      body[input.name] = input.checked;
      break;
    case 'list':
      body[input.name] = text.split(',').map((s) => s.trim())
                             .filter((s) => s);
      break;
    case 'number':
      body[input.name] = numberOrText(text);
      break;
    case 'optional':
      if (text) body[input.name] = numberOrText(text);
      break;
    default:
      body[input.name] = text;
    }
  }
  save(editing, body, form);
}

// ---- look up ----

// The identifiers of the last look up, which an unlock sends again.
let subject = null;

// A decision in words: allowed, denied, blocked (a running block_s, with
// its level where blocks grow), a shadow policy's would-deny, or unknown
// (a fail-closed policy while Redis cannot answer).
function verdict(d) {
  if (d.unknown) return 'unknown: Redis cannot answer (fails closed)';
  let what = d.allowed ? 'allowed' : d.shadow ? 'would deny (shadow)'
                                              : 'denied';
  if (d.blocked_for) {
    what = (d.shadow ? 'would be blocked (shadow)' : 'blocked') + ' for ' +
           d.blocked_for + ' s';
    if (d.block_level) what += ', block ' + d.block_level + ' in a row';
  }
  if (!d.allowed && !d.shadow && d.action === 'challenge')
    what += ' (challenge)';
  return what;
}

function lookupRow(d) {
  const name = d.policy || (d.list ? d.list + ' list entry ' + d.id : '?');
  const tr = el('tr', {});
  tr.append(el('th', {scope: 'row'}, name),
            el('td', {class: d.allowed ? '' : 'denied'}, verdict(d)),
            el('td', {class: 'num'}, d.limit),
            el('td', {class: 'num'},
               d.remaining === undefined ? '' : d.remaining),
            el('td', {class: 'num'},
               d.reset_after === undefined ? '' : d.reset_after + ' s'),
            el('td', {class: 'num'},
               d.retry_after === undefined ? '' : d.retry_after + ' s'));
  tr.append(el('td', {}, d.policy
                             ? rowButton('Unlock', d.policy,
                                         () => unlock(d.policy))
                             : 'edit the list to change'));
  return tr;
}

function lookupSubject() {
  const s = {endpoint: $('lookup-endpoint').value};
  for (const k of ['user', 'ip', 'phone']) {
    const v = $('lookup-' + k).value.trim();
    if (v) s[k] = v;
  }
  return s;
}

async function lookup(s) {
  const res = await api('POST', 'inspect', s);
  const a = res.body;
  let summary;
  if (a.allowed) {
    summary = 'Allowed: a check now would pass.';
  } else if (a.list) {
    summary = 'Denied by the ' + a.list + ' list.';
  } else {
    summary = 'Denied by ' + a.policy +
              (a.retry_after ? ', for ' + a.retry_after + ' s more.' : '.');
  }
  if (a.degraded)
    summary += ' Read from this instance\'s fallback: Redis cannot answer.';
  show($('lookup-summary'), summary);
  $('lookup-body').replaceChildren(...(a.decisions || []).map(lookupRow));
  $('lookup-table').hidden = false;
}

async function onLookup(ev) {
  ev.preventDefault();
  clearMsgs();
  const form = $('lookup-form');
  for (const i of form.querySelectorAll('[aria-invalid]'))
    i.removeAttribute('aria-invalid');
  subject = lookupSubject();
  try {
    await lookup(subject);
  } catch (err) {
    $('lookup-table').hidden = true;
    show($('lookup-summary'), '');
    refusal(err, form);
  }
}

async function unlock(policy) {
  const body = Object.assign({policy}, subject);
  delete body.endpoint;
  let res;
  try {
    res = await api('POST', 'reset', body);
  } catch (err) {
    refusal(err);
    return;
  }
  const done = 'Unlocked ' + policy + ': its counters for this subject ' +
               'are cleared.';
  try {
    await lookup(subject);
  } catch (err) {
    refusal(err);
    return;
  }
  statusMsg(accepted(res, done));
}

// ---- audit ----

// The next page's before= (the API's next_before); null on the last page.
let auditNext = null;

async function loadAudit(before) {
  const q = 'audit?limit=' + AUDIT_PAGE + (before ? '&before=' + before : '');
  try {
    const res = await api('GET', q);
    const rows = (res.body.entries || []).map((e) => el(
        'tr', {},
        el('td', {}, el('time', {datetime: e.at}, e.at)),
        el('td', {}, e.action), el('td', {}, e.name),
        el('td', {}, e.actor)));
    $('audit-body').replaceChildren(...rows);
    auditNext = res.body.next_before;
    $('audit-next').disabled = auditNext === null || auditNext === undefined;
    $('audit-first').disabled = !before;
  } catch (err) {
    refusal(err);
  }
}

// ---- lists ----

function listRow(list, e) {
  return el('tr', {},
            el('td', {class: 'num'}, e.id), el('td', {}, e.kind),
            el('td', {class: e.hash ? 'hash' : ''},
               e.hash ? 'hash ' + e.hash : e.value),
            el('td', {}, e.endpoint), el('td', {class: 'note'}, e.note),
            el('td', {}, rowButton('Delete', list + ' list entry ' + e.id,
                                   () => deleteEntry(list, e))));
}

async function loadLists() {
  for (const list of ['deny', 'allow']) {
    try {
      const res = await api('GET', 'lists/' + list);
      $(list + '-body').replaceChildren(
          ...(res.body.entries || []).map((e) => listRow(list, e)));
    } catch (err) {
      refusal(err);
      return;
    }
  }
}

async function onAddEntry(ev) {
  ev.preventDefault();
  const form = $('list-form');
  for (const i of form.querySelectorAll('[aria-invalid]'))
    i.removeAttribute('aria-invalid');
  const list = $('list-list').value;
  const body = {kind: $('list-kind').value, value: $('list-value').value,
                note: $('list-note').value};
  // An entry without an endpoint holds for every endpoint.
  if ($('list-endpoint').value) body.endpoint = $('list-endpoint').value;
  try {
    const res = await api('POST', 'lists/' + list, body);
    await loadLists();
    $('list-value').value = '';
    $('list-note').value = '';
    statusMsg(accepted(res, 'Added entry ' + res.body.entry.id + ' to the ' +
                       list + ' list.'));
  } catch (err) {
    refusal(err, form);
  }
}

async function deleteEntry(list, e) {
  try {
    const res = await api('DELETE', 'lists/' + list + '/' + e.id);
    await loadLists();
    statusMsg(accepted(res, 'Deleted entry ' + e.id + ' from the ' + list +
                       ' list.'));
  } catch (err) {
    refusal(err);
  }
}

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
  $('overview-updated').textContent =
      'Up to ' + doc.minutes[doc.minutes.length - 1].replace('T', ' ')
                     .replace(/:00\.000Z$/, ' UTC') + ' (this minute so far).';
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

// ---- views ----

const VIEWS = {
  overview: {section: 'view-overview', heading: 'overview-h',
             load: pollOverview},
  shields: {section: 'view-shields', heading: 'shields-h',
            load: () => loadShields(true)},
  policies: {section: 'view-policies', heading: 'policies-h',
             load: loadPolicies},
  lookup: {section: 'view-lookup', heading: 'lookup-h', load: null},
  audit: {section: 'view-audit', heading: 'audit-h',
          load: () => loadAudit(null)},
  lists: {section: 'view-lists', heading: 'lists-h', load: loadLists},
};

function route() {
  if (!signedIn()) {
    signOut(null);
    return;
  }
  // Own properties only: "#constructor" or "#__proto__" is no view, though
  // VIEWS inherits members of those names from Object.prototype.
  const name = location.hash.slice(1);
  const view = Object.hasOwn(VIEWS, name) ? name : 'policies';
  for (const [k, v] of Object.entries(VIEWS)) $(v.section).hidden = k !== view;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === '#' + view)
      a.setAttribute('aria-current', 'page');
    else
      a.removeAttribute('aria-current');
  }
  clearMsgs();
  $('edit-form').hidden = true;
  if (VIEWS[view].load) VIEWS[view].load();
  // The banner follows on every view.
  startShieldsPoll();
  $(VIEWS[view].heading).focus();
}

function start() {
  $('signin-form').addEventListener('submit', onSignIn);
  $('sign-out').addEventListener('click', () => signOut(null));
  $('edit-form').addEventListener('submit', onSave);
  $('edit-cancel').addEventListener('click', () => {
    $('edit-form').hidden = true;
  });
  $('lookup-form').addEventListener('submit', onLookup);
  $('audit-first').addEventListener('click', () => loadAudit(null));
  $('audit-next').addEventListener('click', () => loadAudit(auditNext));
  $('list-form').addEventListener('submit', onAddEntry);
  $('raise-form').addEventListener('submit', onRaise);
  window.addEventListener('hashchange', route);
  if (signedIn()) $('nav').hidden = false;
  route();
}

start();
