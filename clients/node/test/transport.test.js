// SPDX-License-Identifier: Apache-2.0
// Connections, the deadline and retries: what the client does on the
// wire when the service is slow, refusing, capped or gone.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Client } from '../index.js';
import { HANG, RESET, countingSockets, freePort, startFake } from './fake.js';

const ALLOW = { status: 200, body: { allowed: true, device: 'untrusted', decisions: [] } };
const login = { user: 'ana@example.com', ip: '203.0.113.7' };
const otp = { phone: '+14155550100', ip: '203.0.113.7' };

const fakes = [];
async function fake(handler) {
  const f = await startFake(handler);
  fakes.push(f);
  return f;
}
after(() => Promise.all(fakes.map((f) => f.close())));

test('several calls reuse one kept-alive connection', async () => {
  const f = await fake(() => ALLOW);
  const ag = new Client({ baseUrl: f.url });
  for (let i = 0; i < 5; i++) {
    assert.equal((await ag.checkLogin(login)).outcome, 'allow');
  }
  await ag.reportLogin({ ...login, success: false });
  ag.close();
  assert.equal(f.requests.length, 6);
  assert.equal(f.sockets.length, 1);
});

test('an idle connection is closed by the client before the service would', async () => {
  // The fake keeps idle connections 60 s; the client's idle timeout is
  // what closes this one, and the next call opens a fresh connection.
  const f = await fake(() => ALLOW);
  const ag = new Client({ baseUrl: f.url, idleTimeoutMs: 150 });
  await ag.checkLogin(login);
  assert.equal(f.sockets.length, 1);
  const idleSince = performance.now();
  await once(f.sockets[0], 'close');
  const idle = performance.now() - idleSince;
  assert.ok(idle >= 100 && idle < 10_000, `closed after ${idle} ms`);
  assert.equal((await ag.checkLogin(login)).outcome, 'allow');
  assert.equal(f.sockets.length, 2);
  ag.close();
});

test('close() drops the pooled connections at once', async () => {
  const f = await fake(() => ALLOW);
  const ag = new Client({ baseUrl: f.url });
  await ag.checkLogin(login);
  const closed = once(f.sockets[0], 'close');
  ag.close();
  await closed;
});

test('a timeout is failed "timeout": login fails open, OTP closed, nothing retried', async () => {
  const f = await fake(() => HANG);
  const ag = new Client({ baseUrl: f.url, timeoutMs: 150 });
  const started = performance.now();
  const v = await ag.checkLogin(login);
  assert.ok(performance.now() - started >= 140);
  assert.equal(v.failed, 'timeout');
  assert.equal(v.outcome, 'allow');
  assert.equal(v.allowed, true);
  assert.equal(v.status, 0);
  const o = await ag.checkOtp(otp);
  assert.equal(o.failed, 'timeout');
  assert.equal(o.outcome, 'deny');
  const r = await ag.reportLogin({ ...login, success: true });
  assert.deepEqual(r, { recorded: false, deviceToken: null, expiresIn: 0, failed: 'timeout', status: 0 });
  assert.equal(f.requests.length, 3);
  ag.close();
});

test('the fail modes can be turned around', async () => {
  const f = await fake(() => HANG);
  const ag = new Client({ baseUrl: f.url, timeoutMs: 50, failOpenLogin: false, failOpenOtp: true });
  assert.equal((await ag.checkLogin(login)).outcome, 'deny');
  assert.equal((await ag.checkOtpVerify(otp)).outcome, 'allow');
  ag.close();
});

test('the connection cap 503 is retried: the service read nothing', async () => {
  const f = await fake(() => ALLOW);
  f.capRefusals = 2;
  const ag = new Client({ baseUrl: f.url, timeoutMs: 2000 });
  const v = await ag.checkLogin(login);
  assert.equal(v.outcome, 'allow');
  assert.equal(v.failed, null);
  assert.equal(f.sockets.length, 3);
  assert.equal(f.requests.length, 1);
  ag.close();
});

test('the connection cap 503 after the last retry is unavailable', async () => {
  const f = await fake(() => ALLOW);
  f.capRefusals = 10;
  const ag = new Client({ baseUrl: f.url, timeoutMs: 2000, retries: 1 });
  const v = await ag.checkOtp(otp);
  assert.equal(v.failed, 'unavailable');
  assert.equal(v.status, 503);
  assert.equal(v.outcome, 'deny');
  assert.equal(f.sockets.length, 2);
  ag.close();
});

test('a refused connection is retried, then succeeds', async () => {
  const port = await freePort();
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(ALLOW.body));
  });
  const ag = new Client({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 2000 });
  // The service comes up the moment the first connect is refused: before
  // the retry's backoff can end, as listen binds on the next tick.
  const { result, count } = await countingSockets(
    () => ag.checkLogin(login),
    () => server.listen(port, '127.0.0.1'),
  );
  assert.equal(result.outcome, 'allow');
  assert.equal(result.failed, null);
  assert.equal(count, 2);
  ag.close();
  server.close();
});

test('refused connections: retries at most `retries` times, then unavailable', async () => {
  const port = await freePort();
  for (const retries of [0, 2]) {
    const ag = new Client({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 2000, retries });
    const { result, count } = await countingSockets(() => ag.checkLogin(login));
    assert.equal(result.failed, 'unavailable');
    assert.equal(result.outcome, 'allow');
    assert.equal(result.status, 0);
    assert.equal(count, retries + 1);
    ag.close();
  }
});

test('retries never run past the deadline', async () => {
  const port = await freePort();
  const ag = new Client({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 300, retries: 1000 });
  const started = performance.now();
  const { result, count } = await countingSockets(() => ag.checkLogin(login));
  const took = performance.now() - started;
  // The backoff doubles from 20 ms and a pause that would end past the
  // deadline is not taken: the call ends unavailable, or at the deadline
  // when the last try's connect was still under way; never later.
  assert.ok(['unavailable', 'timeout'].includes(result.failed), result.failed);
  assert.ok(took < 300 + 100, `took ${took} ms`);
  assert.ok(count >= 1 && count < 20, `${count} connects`);
  ag.close();
});

test('a connection reset after the request was sent is never retried', async () => {
  const f = await fake(() => RESET);
  const ag = new Client({ baseUrl: f.url, timeoutMs: 2000 });
  const v = await ag.checkLogin(login);
  assert.equal(v.failed, 'unavailable');
  assert.equal(f.requests.length, 1);
  ag.close();
});

test("the caller's AbortSignal rejects the call", async () => {
  const f = await fake(() => HANG);
  const ag = new Client({ baseUrl: f.url, timeoutMs: 5000 });
  const stop = new AbortController();
  const call = ag.checkLogin(login, { signal: stop.signal });
  setImmediate(() => stop.abort());
  await assert.rejects(call, (e) => e.name === 'AbortError');
  await assert.rejects(ag.checkOtp(otp, { signal: AbortSignal.abort() }), (e) => e.name === 'AbortError');
  ag.close();
});
