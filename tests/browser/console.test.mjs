// SPDX-License-Identifier: Apache-2.0
// The admin console in a real browser: Debian's chromium driven by
// playwright-core (no browser download), the site-wide shields' banner,
// overview and switch included. tests/integration/test_console.py
// starts Redis and the service and runs this with:
//   AG_CONSOLE_BASE  the admin listener, e.g. http://127.0.0.1:8081
//   AG_PUBLIC_BASE   the public listener, for real /check-login calls
//   AG_ADMIN_TOKEN   the admin token
//   AG_ARTIFACTS     a directory for the screenshots of each view
// Elements are found by role and label, as a screen reader finds them.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {after, before, describe, it} from 'node:test';

import {chromium} from 'playwright-core';

const BASE = process.env.AG_CONSOLE_BASE;
const PUBLIC = process.env.AG_PUBLIC_BASE || BASE;
const TOKEN = process.env.AG_ADMIN_TOKEN;
const ARTIFACTS = process.env.AG_ARTIFACTS ||
                  fs.mkdtempSync(path.join(os.tmpdir(), 'console-shots-'));
const XSS = '<script>window.__xss=1</script><img src=x onerror=window.__xss=1>';
// Without these chromium tries the network, which is closed here, and
// hangs on the attempts.
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
              '--no-first-run', '--disable-background-networking',
              '--disable-component-update', '--disable-sync'];

assert.ok(BASE && TOKEN, 'AG_CONSOLE_BASE and AG_ADMIN_TOKEN are required');
fs.mkdirSync(ARTIFACTS, {recursive: true});

let context;
let page;
let userDir;
const consoleErrors = [];  // console messages of type error, as text
const pageErrors = [];     // uncaught exceptions in the page
const consoleResponses = [];  // every response for /admin/ui/...
const requestUrls = [];  // every URL the page asked for

async function adminApi(method, p, body) {
  const r = await fetch(BASE + '/admin/' + p, {
    method,
    headers: {Authorization: 'Bearer ' + TOKEN,
              'Content-Type': 'application/json'},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return {status: r.status, body: text ? JSON.parse(text) : null};
}

// Waits until locator's text matches re; fails with the last text seen.
async function waitText(locator, re, timeout = 10000) {
  const deadline = Date.now() + timeout;
  let last = '';
  while (Date.now() < deadline) {
    if (await locator.count() === 1) {
      last = (await locator.textContent()) || '';
      if (re.test(last)) return last;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const alert = page.getByRole('alert');
  const shown = await alert.count() ? await alert.textContent() : '';
  assert.fail('text ' + JSON.stringify(last) + ' never matched ' + re +
              (shown ? '; the alert says ' + JSON.stringify(shown) : ''));
}

function region(name) {
  return page.getByRole('region', {name, exact: true});
}

function policyRow(name) {
  return region('Policies').getByRole('row').filter({
    has: page.getByRole('rowheader', {name, exact: true}),
  });
}

async function shot(name) {
  await page.screenshot({path: path.join(ARTIFACTS, 'console-' + name + '.png'),
                         fullPage: true});
}

before(async () => {
  userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-chromium-'));
  context = await chromium.launchPersistentContext(userDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ARGS,
    viewport: {width: 1280, height: 900},
  });
  // Injected by the browser, not the page, so the page's CSP does not
  // stop it: it records every violation the page would report.
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
    });
  });
  page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error')
      consoleErrors.push({text: m.text(), url: m.location().url || ''});
  });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('request', (r) => requestUrls.push(r.url()));
  page.on('response', (r) => {
    if (new URL(r.url()).pathname.startsWith('/admin/ui'))
      consoleResponses.push(r);
  });
});

after(async () => {
  if (context) await context.close();
  if (userDir) fs.rmSync(userDir, {recursive: true, force: true});
});

describe('the admin console', () => {
  it('refuses a wrong token with an alert and signs in with the right one',
     async () => {
       await page.goto(BASE + '/admin/ui/');
       await page.getByLabel('Admin token', {exact: true})
           .fill('not-the-token-0123456789');
       await page.getByRole('button', {name: 'Sign in'}).click();
       await waitText(page.getByRole('alert'), /token was refused/);
       await shot('signin');
       assert.equal(await page.evaluate(
                        () => sessionStorage.getItem('abuseguard.admin_token')),
                    null, 'a refused token is not kept');
       await page.getByLabel('Admin token', {exact: true}).fill(TOKEN);
       await page.getByRole('button', {name: 'Sign in'}).click();
       await policyRow('login.ip').waitFor();
       assert.equal(await page.getByRole('alert').count(), 0);
       // Kept for this tab only: in sessionStorage, not localStorage.
       assert.equal(await page.evaluate(
                        () => sessionStorage.getItem('abuseguard.admin_token')),
                    TOKEN);
       assert.equal(await page.evaluate(() => localStorage.length), 0);
       const rows = await region('Policies').getByRole('rowheader').count();
       const listed = (await adminApi('GET', 'policies')).body.policies;
       assert.equal(rows, listed.length, 'one row per policy');
       await shot('policies');
     });

  it('names the buttons of each row after the row, starting with their text',
     async () => {
       // A screen reader's list of buttons must tell the rows apart: not
       // "Edit, Edit, Edit".
       const table = region('Policies').getByRole('table');
       const names = await table.getByRole('button').evaluateAll(
           (bs) => bs.map((b) => [b.textContent, b.getAttribute('aria-label')]));
       assert.ok(names.length > 3, JSON.stringify(names));
       for (const [text, name] of names)
         assert.ok(name && name.startsWith(text + ' '), text + ': ' + name);
       const unique = new Set(names.map(([, name]) => name));
       assert.equal(unique.size, names.length, JSON.stringify(names));
       for (const name of ['Edit login.ip', 'Switch to shadow login.ip',
                           'Disable login.ip'])
         assert.equal(await page.getByRole('button', {name, exact: true})
                          .count(), 1, name);
     });

  it('offers no named field that a password manager would keep the token by',
     async () => {
       const field = page.locator('#token');
       assert.equal(await field.getAttribute('name'), null);
       assert.equal(await field.getAttribute('type'), 'password');
       assert.equal(await field.getAttribute('autocomplete'), 'off');
     });

  it('shows a refused edit naming the field and a saved one in the table',
     async () => {
       await policyRow('login.ip').getByRole('button', {name: 'Edit'}).click();
       const form = page.getByRole('form', {name: 'Edit login.ip'});
       const limit = form.getByLabel('limit', {exact: true});
       assert.equal(await limit.inputValue(), '100');
       assert.equal(await form.getByLabel('window_s', {exact: true})
                        .inputValue(), '900');
       await limit.fill('0');
       await form.getByRole('button', {name: 'Save'}).click();
       const text = await waitText(page.getByRole('alert'), /limit/);
       assert.match(text, /^limit must be/);
       assert.equal(await limit.getAttribute('aria-invalid'), 'true');
       await shot('edit-refused');
       assert.equal((await adminApi('GET', 'policies/login.ip'))
                        .body.policy.limit, 100, 'the refused edit changed nothing');
       await limit.fill('150');
       await form.getByRole('button', {name: 'Save'}).click();
       await waitText(page.getByRole('status'), /Saved login\.ip/);
       await waitText(policyRow('login.ip').getByRole('cell').nth(3), /^150$/);
       assert.equal(await form.count(), 0, 'the form closes once saved');
       assert.equal((await adminApi('GET', 'policies/login.ip'))
                        .body.policy.limit, 150);
     });

  it('refuses a save over another operator\'s change and shows it',
     async () => {
       // Issue 37: the console sends the version it read (If-Match); a
       // change made meanwhile through the API wins, the console says so
       // and shows it, and the stale save changes nothing.
       await policyRow('login.user').getByRole('button', {name: 'Edit'})
           .click();
       const form = page.getByRole('form', {name: 'Edit login.user'});
       const other = (await adminApi('GET', 'policies/login.user')).body.policy;
       other.limit = 77;
       assert.equal((await adminApi('PUT', 'policies/login.user', other))
                        .status, 200);
       await form.getByLabel('limit', {exact: true}).fill('33');
       await form.getByRole('button', {name: 'Save'}).click();
       await waitText(page.getByRole('alert'), /was saved first/);
       await waitText(policyRow('login.user').getByRole('cell').nth(3),
                      /^77$/);
       assert.equal((await adminApi('GET', 'policies/login.user'))
                        .body.policy.limit, 77, 'the stale save changed nothing');
       // Made again on top of it, it is saved.
       await form.getByLabel('limit', {exact: true}).fill('33');
       await form.getByRole('button', {name: 'Save'}).click();
       await waitText(page.getByRole('status'), /Saved login\.user/);
       assert.equal((await adminApi('GET', 'policies/login.user'))
                        .body.policy.limit, 33);
     });

  it('edits a signal policy\'s lists and says when a file is not loaded',
     async () => {
       // Issue 39: this service has no --ip-list, so a policy on the tor
       // list is kept and skipped here; the save says so.
       const tor = {endpoint: 'login', key: ['ip'], algorithm: 'signal',
                    signal: 'ip_listed', lists: ['tor'],
                    applies_to: 'untrusted', action: 'challenge'};
       const put = await adminApi('PUT', 'policies/net.tor', tor);
       assert.equal(put.status, 201);
       assert.match(put.body.warnings[0], /--ip-list tor=PATH/);
       await page.reload();
       await policyRow('net.tor').getByRole('button', {name: 'Edit'}).click();
       const form = page.getByRole('form', {name: 'Edit net.tor'});
       const lists = form.getByLabel('lists', {exact: true});
       assert.equal(await lists.inputValue(), 'tor');
       await lists.fill('tor, hosting');
       await form.getByRole('button', {name: 'Save'}).click();
       const text = await waitText(page.getByRole('status'),
                                   /Saved net\.tor.*Warning/);
       assert.match(text, /names the IP list tor, which this instance has not loaded/);
       assert.deepEqual((await adminApi('GET', 'policies/net.tor'))
                            .body.policy.lists, ['tor', 'hosting']);
       // A policy whose record has no lists becomes a signal on them:
       // the form offers signal, lists and countries, and leaves out
       // what is left empty.
       const plain = {endpoint: 'login', key: ['ip'], algorithm: 'sliding_log',
                      limit: 5, window_s: 60};
       assert.equal((await adminApi('PUT', 'policies/net.plain', plain))
                        .status, 201);
       await page.reload();
       await policyRow('net.plain').getByRole('button', {name: 'Edit'})
           .click();
       const form2 = page.getByRole('form', {name: 'Edit net.plain'});
       assert.equal(await form2.getByLabel('countries', {exact: true})
                        .inputValue(), '');
       await form2.getByLabel('algorithm', {exact: true}).fill('signal');
       await form2.getByLabel('limit', {exact: true}).fill('1');
       await form2.getByLabel('window_s', {exact: true}).fill('1');
       await form2.getByLabel('signal', {exact: true}).fill('ip_listed');
       await form2.getByLabel('lists', {exact: true}).fill('vpn');
       await form2.getByRole('button', {name: 'Save'}).click();
       await waitText(page.getByRole('status'),
                      /Saved net\.plain.*names the IP list vpn/);
       const saved = (await adminApi('GET', 'policies/net.plain')).body.policy;
       assert.equal(saved.signal, 'ip_listed');
       assert.deepEqual(saved.lists, ['vpn']);
       assert.equal('countries' in saved, false);
       assert.equal((await adminApi('DELETE', 'policies/net.plain')).status,
                    204);
       assert.equal((await adminApi('DELETE', 'policies/net.tor')).status,
                    204);
       await page.reload();
     });

  it('switches shadow and enforce, and enabled, with one click each',
     async () => {
       const row = policyRow('otp.ip');
       await row.getByRole('button', {name: 'Switch to shadow'}).click();
       await row.getByRole('button', {name: 'Switch to enforce'}).waitFor();
       assert.equal((await adminApi('GET', 'policies/otp.ip')).body.policy.mode,
                    'shadow');
       await row.getByRole('button', {name: 'Disable'}).click();
       await row.getByRole('button', {name: 'Enable'}).waitFor();
       let p = (await adminApi('GET', 'policies/otp.ip')).body.policy;
       assert.equal(p.enabled, false);
       assert.equal(p.mode, 'shadow', 'a toggle keeps the rest of the record');
       assert.equal(p.limit, 20);
       await row.getByRole('button', {name: 'Switch to enforce'}).click();
       await row.getByRole('button', {name: 'Switch to shadow'}).waitFor();
       await row.getByRole('button', {name: 'Enable'}).click();
       await row.getByRole('button', {name: 'Disable'}).waitFor();
       p = (await adminApi('GET', 'policies/otp.ip')).body.policy;
       assert.equal(p.mode, 'enforce');
       assert.equal(p.enabled, true);
     });

  it('looks up a locked subject, unlocks it, and then shows it allowed',
     async () => {
       const user = 'locked@example.com';
       const ip = '198.51.100.7';
       // login.user_ip allows an untrusted device 5 attempts in 900 s:
       // real checks use them up, and the sixth is refused.
       let last;
       for (let i = 0; i < 6; i++)
         last = await fetch(PUBLIC + '/check-login', {
           method: 'POST', body: JSON.stringify({user, ip})});
       assert.equal(last.status, 429);
       assert.equal((await last.json()).policy, 'login.user_ip');
       await page.getByRole('link', {name: 'Look up'}).click();
       const view = region('Look up');
       await view.getByLabel('endpoint', {exact: true}).selectOption('login');
       await view.getByLabel('user', {exact: true}).fill(user);
       await view.getByLabel('ip', {exact: true}).fill(ip);
       await view.getByRole('button', {name: 'Look up'}).click();
       const row = view.getByRole('row').filter({
         has: page.getByRole('rowheader', {name: 'login.user_ip', exact: true}),
       });
       await waitText(row.getByRole('cell').first(), /^denied/);
       await view.getByText(/^Denied by login\.user_ip/).waitFor();
       // One row per policy of the endpoint that the subject's lane
       // applies, each with its own Unlock.
       assert.ok(await view.getByRole('button', {name: 'Unlock'}).count() > 1);
       assert.equal(await row.getByRole('button', {
         name: 'Unlock login.user_ip', exact: true}).count(), 1);
       await shot('lookup-locked');
       // login.ip_users blocks an address for an hour once it has tried
       // 20 users: the 21st is refused and the block starts.
       const busy = '198.51.100.99';
       for (let i = 0; i <= 20; i++)
         last = await fetch(PUBLIC + '/check-login', {
           method: 'POST',
           body: JSON.stringify({user: 'u' + i + '@example.com', ip: busy})});
       assert.equal((await last.json()).policy, 'login.ip_users');
       await view.getByLabel('ip', {exact: true}).fill(busy);
       await view.getByRole('button', {name: 'Look up'}).click();
       const blocked = view.getByRole('row').filter({
         has: page.getByRole('rowheader', {name: 'login.ip_users',
                                           exact: true}),
       });
       await waitText(blocked.getByRole('cell').first(),
                      /^blocked for \d+ s, block 1 in a row$/);
       await shot('lookup-blocked');
       await view.getByLabel('ip', {exact: true}).fill(ip);
       await view.getByRole('button', {name: 'Look up'}).click();
       await waitText(row.getByRole('cell').first(), /^denied/);
       await row.getByRole('button', {name: 'Unlock'}).click();
       await waitText(page.getByRole('status'), /^Unlocked login\.user_ip/);
       await waitText(row.getByRole('cell').first(), /^allowed$/);
       await view.getByText(/^Allowed/).waitFor();
       await shot('lookup');
       // A real check passes again.
       const again = await fetch(PUBLIC + '/check-login', {
         method: 'POST', body: JSON.stringify({user, ip})});
       assert.equal(again.status, 200);
     });

  it('lists the edits and the unlock in the audit log, a page at a time',
     async () => {
    await page.getByRole('link', {name: 'Audit'}).click();
    const audit = region('Audit');
    await audit.getByRole('row').nth(1).waitFor();
    const rows = audit.getByRole('row');
    const cells = async (i) =>
        (await rows.nth(i).getByRole('cell').allTextContents());
    const first = await cells(1);
    assert.equal(first[3], 'admin-api');
    assert.match(first[0], /^\d{4}-\d\d-\d\d/);
    const page1 = [];
    for (let i = 1; i < await rows.count(); i++) page1.push(await cells(i));
    const has = (action, name) => assert.ok(
        page1.some((c) => c[1] === action && c[2] === name),
        action + ' ' + name + ' in ' + JSON.stringify(page1));
    has('update', 'login.ip');
    has('update', 'otp.ip');
    has('reset', 'login.user_ip');
    await shot('audit');
    const next = audit.getByRole('button', {name: 'Next page'});
    assert.equal(await next.isEnabled(), true);
    await next.click();
    await waitText(rows.nth(1), /seed/);
    const page2 = await cells(1);
    assert.equal(page2[3], 'seed');
    assert.ok(!page1.some((c) => c.join() === page2.join()),
              'the next page holds older entries');
  });

  it('switches a shield to the risky scope and back', async () => {
    // Issue 40: a shield that challenges only the risky, from the form
    // (after the audit's pages, whose rows it would move).
    await page.getByRole('link', {name: 'Policies'}).click();
    await policyRow('login.site_failures').getByRole('button', {name: 'Edit'})
        .click();
    let form = page.getByRole('form', {name: 'Edit login.site_failures'});
    const scope = form.getByLabel('scope', {exact: true});
    assert.equal(await scope.inputValue(), '');
    await scope.fill('risky');
    await form.getByRole('button', {name: 'Save'}).click();
    await waitText(page.getByRole('status'), /Saved login\.site_failures/);
    let saved = (await adminApi('GET', 'policies/login.site_failures'))
        .body.policy;
    assert.equal(saved.scope, 'risky');
    await page.reload();
    await policyRow('login.site_failures').getByRole('button', {name: 'Edit'})
        .click();
    form = page.getByRole('form', {name: 'Edit login.site_failures'});
    assert.equal(await form.getByLabel('scope', {exact: true}).inputValue(),
                 'risky');
    // Back to the default, which the record then leaves out.
    await form.getByLabel('scope', {exact: true}).fill('untrusted');
    await form.getByRole('button', {name: 'Save'}).click();
    await waitText(page.getByRole('status'), /Saved login\.site_failures/);
    saved = (await adminApi('GET', 'policies/login.site_failures')).body.policy;
    assert.equal('scope' in saved, false);
    await page.reload();
  });

  it('adds a list entry, shows a note with markup as text, and deletes it',
     async () => {
       await page.getByRole('link', {name: 'Lists'}).click();
       const lists = region('Lists');
       const add = lists.getByRole('form', {name: 'Add an entry'});
       await add.getByLabel('list', {exact: true}).selectOption('deny');
       await add.getByLabel('kind', {exact: true}).selectOption('ip');
       await add.getByLabel('value', {exact: true}).fill('203.0.113.9');
       await add.getByLabel('endpoint', {exact: true}).selectOption({label: '* (every endpoint)'});
       await add.getByLabel('note', {exact: true}).fill(XSS);
       await add.getByRole('button', {name: 'Add entry'}).click();
       await waitText(page.getByRole('status'), /Added entry \d+ to the deny/);
       const deny = lists.getByRole('table', {name: 'Deny list'});
       const row = deny.getByRole('row').filter({hasText: '203.0.113.9'});
       await row.waitFor();
       const note = row.getByRole('cell').nth(4);
       assert.equal(await note.textContent(), XSS);
       assert.equal(await note.evaluate((n) => n.children.length), 0,
                    'the note made no element');
       assert.equal(await page.evaluate(() => document.querySelectorAll(
                        'main img, main script').length), 0);
       assert.equal(await page.evaluate(() => typeof window.__xss),
                    'undefined');
       await shot('lists');
       const entries = (await adminApi('GET', 'lists/deny')).body.entries;
       const entry = entries.find((e) => e.value === '203.0.113.9');
       assert.equal(entry.note, XSS);
       await row.getByRole('button', {
         name: 'Delete deny list entry ' + entry.id, exact: true}).click();
       await waitText(page.getByRole('status'),
                      new RegExp('Deleted entry ' + entry.id));
       assert.equal(await row.count(), 0);
       assert.ok(!(await adminApi('GET', 'lists/deny')).body.entries.some(
           (e) => e.id === entry.id));
       assert.equal(await page.evaluate(() => typeof window.__xss),
                    'undefined');
     });

  // Site-wide shields (issue 27): the banner, the overview, the switch.
  const SHIELD = 'login.site_failures';
  let n = 0;
  // A real check of a user and address no other test uses: only a
  // shield can stop it.
  async function untrustedCheck() {
    n++;
    return fetch(PUBLIC + '/check-login', {
      method: 'POST',
      body: JSON.stringify({user: 'wave' + n + '@example.com',
                            ip: '10.77.' + (n >> 8) + '.' + (n & 255)})});
  }
  const banner = () => region('Site-wide shield raised');

  it('shows a raised shield in a banner on every view, with its figures',
     async () => {
       for (let i = 0; i < 3; i++)
         assert.equal((await untrustedCheck()).status, 200);
       const r = await adminApi('POST', 'shields/' + SHIELD,
                                {raise_for_s: 3600});
       assert.equal(r.status, 200, JSON.stringify(r.body));
       const asked = await untrustedCheck();
       assert.equal(asked.status, 429);
       const body = await asked.json();
       assert.equal(body.policy, SHIELD);
       assert.equal(body.action, 'challenge');
       // The banner's poll finds it within its interval.
       const item = banner().getByRole('listitem').filter({hasText: SHIELD});
       const text = await waitText(item, /is raised since/, 15000);
       assert.match(text, new RegExp('^' + SHIELD.replace('.', '\\.') +
                                     ' is raised since \\d{4}-\\d\\d-\\d\\d ' +
                                     '\\d\\d:\\d\\d:\\d\\d UTC until '));
       assert.match(text, /in the last 60 s window/);
       assert.match(text, /threshold 100\)/);
       assert.match(text, /baseline \d/);
       assert.match(text, /untrusted login checks get a challenge/);
       assert.match(text, /every instance \(Redis\)/);
       assert.equal(await item.getByRole('button', {
         name: 'Lower ' + SHIELD, exact: true}).count(), 1);
       // On every view.
       for (const view of ['Lists', 'Audit', 'Policies']) {
         await page.getByRole('link', {name: view, exact: true}).click();
         await region(view).waitFor();
         assert.equal(await banner().isVisible(), true, view);
       }
       await shot('shield-banner');
     });

  it('draws the overview of the last hour as charts, series labelled',
     async () => {
       await page.getByRole('link', {name: 'Overview', exact: true}).click();
       const view = region('Overview');
       await view.waitFor();
       const figure = (title) => view.locator('figure').filter({
         has: page.locator('figcaption', {hasText: title})});
       const checks = figure('Checks per minute');
       await checks.locator('svg').waitFor();
       // One path a series, 60 minutes each, drawn (not empty).
       const series = await checks.locator('svg path.series').evaluateAll(
           (ps) => ps.map((p) => [p.dataset.series, p.dataset.points,
                                  p.getAttribute('d')]));
       assert.deepEqual(series.map((s) => s[0]),
                        ['allowed', 'denied', 'unavailable', 'invalid']);
       for (const [label, points, d] of series) {
         assert.equal(points, '60', label);
         assert.match(d, /^M[\d.]+ [\d.]+( L[\d.]+ [\d.]+){59}$/, label);
       }
       assert.match(await checks.locator('svg').getAttribute('aria-label'),
                    /^Checks per minute.*; last minute: allowed \d+, denied \d+/);
       const legend = await checks.getByRole('listitem').allTextContents();
       assert.ok(legend.some((t) => /^allowed \((\d+) in the hour\)$/.test(t) &&
                                    Number(t.match(/\d+/)[0]) >= 3),
                 JSON.stringify(legend));
       // The challenge the shield asked for, under its name.
       const asked = figure('Challenges asked for per minute');
       await asked.locator('svg path[data-series="' + SHIELD + '"]').waitFor();
       assert.match(await asked.getByRole('listitem').first().textContent(),
                    new RegExp(SHIELD.replace('.', '\\.') +
                               ' \\([1-9]\\d* in the hour\\)'));
       // Each shield: its count against its baseline and threshold, and
       // the minutes it was raised shaded.
       const shield = figure('Shield ' + SHIELD);
       await shield.locator('svg').waitFor();
       assert.deepEqual(
           await shield.locator('svg path.series').evaluateAll(
               (ps) => ps.map((p) => p.dataset.series)),
           ['count', 'baseline', 'threshold']);
       const threshold = await shield.locator(
           'svg path[data-series="threshold"]').getAttribute('d');
       assert.match(threshold, /^M[\d.]+ [\d.]+/);
       assert.ok(await shield.locator('svg rect.raised').count() >= 1);
       assert.ok(await figure('Shield login.site_unknown_users')
                     .locator('svg').count() === 1);
       assert.match(await shield.getByRole('listitem').nth(2).textContent(),
                    /^threshold \(now 100, peak 100\)$/);
       assert.match(await view.textContent(), /as this\s+instance saw it/);
       // The fleet (issue 37): its version, this instance's, none behind.
       const fleet = (await adminApi('GET', 'fleet')).body;
       await waitText(view.locator('#overview-fleet'), new RegExp(
           '^Fleet main is at version \\d+; this instance is at \\d+ ' +
           '\\(following\\)\\. No instance is behind\\.$'));
       assert.equal(fleet.instance.state, 'following');
       await shot('overview');
     });

  it('lowers the shield with the banner\'s switch, and the banner goes',
     async () => {
       await banner().getByRole('button', {name: 'Lower ' + SHIELD,
                                           exact: true}).click();
       await waitText(page.getByRole('status'),
                      new RegExp('^Lowered ' + SHIELD.replace('.', '\\.')));
       await banner().waitFor({state: 'hidden'});
       const listed = (await adminApi('GET', 'shields')).body.shields;
       assert.equal(listed.find((s) => s.name === SHIELD).raised, false);
       assert.equal((await untrustedCheck()).status, 200);
       const audit = (await adminApi('GET', 'audit?limit=5')).body.entries;
       assert.deepEqual(audit.slice(0, 2).map((e) => [e.action, e.name]),
                        [['shield_lower', SHIELD], ['shield_raise', SHIELD]]);
     });

  it('raises a shield for a while from the shields view and lowers it there',
     async () => {
       const other = 'login.site_unknown_users';
       await page.getByRole('link', {name: 'Shields', exact: true}).click();
       const view = region('Shields');
       const row = view.getByRole('row').filter({
         has: page.getByRole('rowheader', {name: other, exact: true})});
       await waitText(row.getByRole('cell').first(), /^lowered$/);
       const form = view.getByRole('form', {name: /Raise a shield/});
       await form.getByLabel('shield', {exact: true}).selectOption(other);
       await form.getByLabel('raise_for_s', {exact: true}).fill('120');
       await form.getByRole('button', {name: 'Raise'}).click();
       await waitText(page.getByRole('status'),
                      /^Raised login\.site_unknown_users for 120 s\.$/);
       await waitText(row.getByRole('cell').first(), /^raised until /);
       await banner().getByRole('listitem').filter({hasText: other}).waitFor();
       const s = (await adminApi('GET', 'shields')).body.shields.find(
           (x) => x.name === other);
       assert.equal(s.raised, true);
       const left = (Date.parse(s.until) - Date.parse(s.since)) / 1000;
       assert.ok(left === 120, String(left));
       await shot('shields');
       await row.getByRole('button', {name: 'Lower ' + other, exact: true})
           .click();
       await waitText(row.getByRole('cell').first(), /^lowered$/);
       await banner().waitFor({state: 'hidden'});
     });

  it('falls back to the policies view for any hash that is no view',
     async () => {
       // An inherited property name is no view either: VIEWS[name] must
       // not find Object.prototype's members.
       for (const hash of ['#nope', '#constructor', '#__proto__',
                           '#toString']) {
         const before = pageErrors.length;
         await page.evaluate((h) => { location.hash = h; }, hash);
         await region('Policies').waitFor({timeout: 2000}).catch(() => {});
         assert.deepEqual(pageErrors.slice(before), [], hash);
         assert.equal(await region('Policies').isVisible(), true, hash);
       }
       await page.evaluate(() => { location.hash = '#policies'; });
     });

  it('never put the token in a URL', async () => {
    assert.ok(requestUrls.length > 0);
    for (const u of requestUrls)
      assert.ok(!u.includes(TOKEN), u);
    assert.ok(!page.url().includes(TOKEN));
  });

  it('sent every console file with its security headers', async () => {
    assert.ok(consoleResponses.length >= 3, 'the page, its script and style');
    for (const r of consoleResponses) {
      const h = await r.allHeaders();
      const where = r.url();
      assert.match(h['content-security-policy'], /^default-src 'self';/, where);
      assert.equal(h['x-frame-options'], 'DENY', where);
      assert.equal(h['referrer-policy'], 'no-referrer', where);
      assert.equal(h['x-content-type-options'], 'nosniff', where);
    }
  });

  it('raised no script error and no CSP violation', async () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(await page.evaluate(() => window.__csp), []);
    // Chromium logs each refused API call as a console error; these are
    // the three the test asked for (the wrong token, the limit of 0, the
    // stale save), and nothing else may be there.
    const refused = consoleErrors.filter(
        (e) => /^Failed to load resource: the server responded with a status of 4\d\d/
                   .test(e.text) &&
               !new URL(e.url).pathname.startsWith('/admin/ui'));
    const others = consoleErrors.filter((e) => !refused.includes(e));
    assert.deepEqual(others, []);
    assert.deepEqual(
        refused.map((e) => e.text.match(/status of (\d+)/)[1] + ' ' +
                           new URL(e.url).pathname),
        ['401 /admin/policies', '400 /admin/policies/login.ip',
         '412 /admin/policies/login.user']);
  });
});
