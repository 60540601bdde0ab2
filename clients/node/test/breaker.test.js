// SPDX-License-Identifier: Apache-2.0
// The breaker against a fake service, on an injected clock: it opens
// after N calls in a row without an answer, makes no request while
// open, lets one call try once the period has passed on the clock, and
// closes on any answer. Time moves only when the test moves it.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { Client, UsageError } from '../index.js';
import { HANG, startFake } from './fake.js';
import { Breaker } from '../lib/breaker.js';

const ALLOW = () => ({ status: 200, body: { allowed: true, device: 'untrusted', decisions: [] } });
const DOWN = () => ({ status: 500, body: { error: 'down' } });
const login = { user: 'ana@example.com', ip: '203.0.113.7' };

let fake;
let now;
let ag;
before(async () => {
  fake = await startFake(DOWN);
});
after(() => fake.close());
beforeEach(() => {
  now = 1_000_000;
  fake.handler = DOWN;
  fake.requests.length = 0;
  ag?.close();
  ag = new Client({ baseUrl: fake.url, breakerFailures: 3, breakerOpenMs: 1000, clock: () => now });
});

async function failThrice() {
  for (let i = 0; i < 3; i++) {
    assert.equal((await ag.checkLogin(login)).failed, 'unavailable');
  }
}

test('opens after N failures in a row and then makes no request at all', async () => {
  await failThrice();
  assert.equal(fake.requests.length, 3);
  fake.handler = ALLOW;
  const v = await ag.checkLogin(login);
  assert.equal(v.failed, 'breaker_open');
  assert.equal(v.outcome, 'allow');
  assert.equal(v.status, 0);
  const o = await ag.checkOtp({ phone: '+14155550100', ip: '203.0.113.7' });
  assert.equal(o.failed, 'breaker_open');
  assert.equal(o.outcome, 'deny');
  const r = await ag.reportLogin({ ...login, success: true });
  assert.deepEqual(r, { recorded: false, deviceToken: null, expiresIn: 0, failed: 'breaker_open', status: 0 });
  assert.equal(await ag.breached('hunter2'), 'unknown');
  assert.equal(fake.requests.length, 3);
});

test('stays open until the period has passed on the clock, then one call closes it', async () => {
  await failThrice();
  fake.handler = ALLOW;
  now += 999;
  assert.equal((await ag.checkLogin(login)).failed, 'breaker_open');
  assert.equal(fake.requests.length, 3);
  now += 1;
  const trial = await ag.checkLogin(login);
  assert.equal(trial.failed, null);
  assert.equal(trial.outcome, 'allow');
  assert.equal(fake.requests.length, 4);
  // Closed: calls go through without moving the clock.
  assert.equal((await ag.checkLogin(login)).failed, null);
  assert.equal(fake.requests.length, 5);
});

test('a failed half-open trial opens it for another whole period', async () => {
  await failThrice();
  now += 1000;
  assert.equal((await ag.checkLogin(login)).failed, 'unavailable');
  assert.equal(fake.requests.length, 4);
  now += 999;
  assert.equal((await ag.checkLogin(login)).failed, 'breaker_open');
  now += 1;
  fake.handler = ALLOW;
  assert.equal((await ag.checkLogin(login)).failed, null);
});

test('half-open lets exactly one call through; the others still see it open', async () => {
  await failThrice();
  now += 1000;
  let release;
  fake.handler = () => new Promise((resolve) => (release = () => resolve(ALLOW())));
  const trial = ag.checkLogin(login);
  const other = await ag.checkLogin(login);
  assert.equal(other.failed, 'breaker_open');
  while (!release) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  fake.handler = ALLOW;
  release();
  assert.equal((await trial).failed, null);
  assert.equal((await ag.checkLogin(login)).failed, null);
  assert.equal(fake.requests.length, 5);
});

test('any answer resets the count: a usage error, a deny and a degraded answer too', async () => {
  for (const answer of [
    () => ({ status: 400, body: { error: 'user is required', field: 'user' } }),
    () => ({ status: 200, body: { allowed: true, degraded: true, device: 'untrusted', decisions: [] } }),
    () => ({ status: 429, body: { allowed: false, action: 'deny', policy: 'p', retry_after: 1, decisions: [] } }),
    // Not abuseguard's answers, but answers: loud usage errors, no outage.
    () => ({ status: 302, body: 'moved', headers: { location: '/login' } }),
    () => ({ status: 202, body: { accepted: true } }),
  ]) {
    fake.handler = DOWN;
    await ag.checkLogin(login);
    await ag.checkLogin(login);
    fake.handler = answer;
    await ag.checkLogin(login).catch((e) => assert.ok(e instanceof UsageError));
    fake.handler = DOWN;
    await ag.checkLogin(login);
    await ag.checkLogin(login);
    // Two failures, an answer, two failures: never three in a row.
    fake.handler = ALLOW;
    assert.equal((await ag.checkLogin(login)).failed, null);
  }
  assert.equal(fake.requests.length, 30);
});

test("a report's degraded 503 is an answer: it resets the count", async () => {
  const otp = { phone: '+14155550100', ip: '203.0.113.7' };
  await ag.checkLogin(login);
  await ag.checkLogin(login);
  fake.handler = () => ({ status: 503, body: { allowed: false, reason: 'store_unavailable', degraded: true } });
  assert.equal((await ag.reportOtp({ ...otp, verified: true })).recorded, false);
  fake.handler = DOWN;
  await ag.checkLogin(login);
  await ag.checkLogin(login);
  fake.handler = ALLOW;
  assert.equal((await ag.checkLogin(login)).failed, null);
  assert.equal(fake.requests.length, 6);
});

test("a trial that fails after another call's late answer closed the breaker is one failure, no reopening", async () => {
  // A call in flight from before the breaker opened answers while the
  // half-open trial is still out: the service is back, the breaker
  // closes, and the trial's own failure then is one failure in a row,
  // not the end of a trial that no longer exists.
  const held = new Map();
  const hold = (who) => new Promise((resolve) => held.set(who, resolve));
  fake.handler = (req, body) => (body.user === 'late' || body.user === 'trial' ? hold(body.user) : DOWN());
  const settle = async (who, answer) => {
    while (!held.has(who)) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    held.get(who)(answer);
  };
  const late = ag.checkLogin({ ...login, user: 'late' });
  await failThrice();
  assert.equal((await ag.checkLogin(login)).failed, 'breaker_open');
  now += 1000;
  const trial = ag.checkLogin({ ...login, user: 'trial' });
  await settle('late', ALLOW());
  assert.equal((await late).failed, null);
  await settle('trial', DOWN());
  assert.equal((await trial).failed, 'unavailable');
  // Closed, with one failure counted: two more open it, not fewer.
  assert.equal((await ag.checkLogin(login)).failed, 'unavailable');
  assert.equal((await ag.checkLogin(login)).failed, 'unavailable');
  assert.equal((await ag.checkLogin(login)).failed, 'breaker_open');
  assert.equal(fake.requests.length, 7);
});

test('timeouts count as failures', async () => {
  ag.close();
  ag = new Client({ baseUrl: fake.url, breakerFailures: 2, timeoutMs: 50, clock: () => now });
  fake.handler = () => HANG;
  assert.equal((await ag.checkLogin(login)).failed, 'timeout');
  assert.equal((await ag.checkLogin(login)).failed, 'timeout');
  assert.equal((await ag.checkLogin(login)).failed, 'breaker_open');
  ag.close();
});

test("a call the caller aborted neither counts nor resets", async () => {
  await ag.checkLogin(login);
  await ag.checkLogin(login);
  const aborted = ag.checkLogin(login, { signal: AbortSignal.abort() });
  await assert.rejects(aborted, (e) => e.name === 'AbortError');
  assert.equal((await ag.checkLogin(login)).failed, 'unavailable');
  assert.equal((await ag.checkLogin(login)).failed, 'breaker_open');
});

test('an aborted half-open trial hands the trial back', async () => {
  await failThrice();
  now += 1000;
  fake.handler = () => HANG;
  const stop = new AbortController();
  const trial = ag.checkLogin(login, { signal: stop.signal });
  assert.equal((await ag.checkLogin(login)).failed, 'breaker_open');
  stop.abort();
  await assert.rejects(trial, (e) => e.name === 'AbortError');
  fake.handler = ALLOW;
  assert.equal((await ag.checkLogin(login)).failed, null);
  ag.close();
});

/** The Breaker alone, on its own clock: a first trial is still out when
 * a late answer closes the breaker and failures open it again; a second
 * trial is out when the first one ends. */
function staleTrial() {
  const clock = { t: 0 };
  const b = new Breaker(2, 100, () => clock.t);
  const before = b.admit();
  b.failed(b.admit());
  b.failed(b.admit());
  clock.t += 100;
  const oldTrial = b.admit();
  assert.equal(oldTrial.trial, true);
  b.answered(before);
  b.failed(b.admit());
  b.failed(b.admit());
  assert.equal(b.admit(), null);
  clock.t += 100;
  const newTrial = b.admit();
  assert.equal(newTrial.trial, true);
  return { b, clock, oldTrial, newTrial };
}

test('a trial that outlived its opening does not decide the later one', () => {
  const { b, clock, oldTrial, newTrial } = staleTrial();
  b.failed(oldTrial);
  clock.t += 100;
  assert.equal(b.admit(), null, 'the old trial ended the new one');
  b.answered(newTrial);
  assert.equal(b.admit().trial, false);
});

test('a trial that outlived its opening, abandoned, frees no trial slot', () => {
  const { b, oldTrial, newTrial } = staleTrial();
  b.abandoned(oldTrial);
  assert.equal(b.admit(), null, 'the old trial handed back a slot it no longer held');
  b.failed(newTrial);
  assert.equal(b.admit(), null);
});
