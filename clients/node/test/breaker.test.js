// SPDX-License-Identifier: Apache-2.0
// The breaker against a fake service, on an injected clock: it opens
// after N calls in a row without an answer, makes no request while
// open, lets one call try once the period has passed on the clock, and
// closes on any answer. Time moves only when the test moves it.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { Client, UsageError } from '../index.js';
import { HANG, startFake } from './fake.js';

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
  assert.equal(fake.requests.length, 18);
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
