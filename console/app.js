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
// Fields the edit form offers although a record may lack them: min_ratio
// is in a record only when its algorithm is conversion, signal only for
// signal, scope only for a risky-scoped shield, lists and countries
// (lists of words) only for the signals that take them. Left empty, they
// are left out.
const OPTIONAL_FIELDS = ['min_ratio', 'signal', 'scope'];
const OPTIONAL_LISTS = ['lists', 'countries'];

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
async function api(method, path, body, token, extra) {
  const headers = Object.assign({Authorization: 'Bearer ' +
                   (token || sessionStorage.getItem(TOKEN_KEY) || '')},
                                extra || {});
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
  return {status: r.status, body: parsed, etag: r.headers.get('ETag')};
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
  let text = done;
  if (res.status === 202 && res.body && res.body.message)
    text += ' (' + res.body.message + ')';
  // A policy that needs a network file this instance lacks is kept but
  // skipped here: say so beside the success.
  const warnings = res.body && res.body.warnings;
  if (Array.isArray(warnings) && warnings.length)
    text += '. Warning: ' + warnings.join('; ');
  return text;
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
// Each policy's version as read (its ETag, unquoted), sent back in
// If-Match so that a save never overwrites a change another operator
// made since (the API answers 412).
let versions = {};

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
    versions = res.body.versions || {};
    renderPolicies();
  } catch (err) {
    refusal(err);
  }
}

// PUTs the whole record; on success the table shows what the API kept.
async function save(name, body, form) {
  try {
    const match = Object.hasOwn(versions, name) ?
        {'If-Match': '"' + versions[name] + '"'} : undefined;
    const res = await api('PUT', 'policies/' + encodeURIComponent(name),
                          body, undefined, match);
    const kept = res.body.policy;
    const tag = /^"([0-9]+)"$/.exec(res.etag || '');
    if (tag) versions[name] = Number(tag[1]);
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
    if (err instanceof ApiError && err.status === 412) {
      // Another change came first: show it, and keep the form for the
      // operator to make theirs again on top of it.
      await loadPolicies();
      alertMsg('Another change to ' + name + ' was saved first; the table ' +
               'shows it now. Nothing of yours was saved: make your ' +
               'change again.');
      return;
    }
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

// An optional field of words, absent from the record.
function optionalListInput(name) {
  const [label, input] = fieldInput(name, undefined);
  input.dataset.kind = 'optional-list';
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
  for (const k of OPTIONAL_LISTS)
    if (!(k in rec)) fields.push(...optionalListInput(k));
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
    case 'optional-list':
      if (text)
        body[input.name] = text.split(',').map((s) => s.trim())
                               .filter((s) => s);
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
