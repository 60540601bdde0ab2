// SPDX-License-Identifier: Apache-2.0
// Connections, the deadline and retries: what the client does on the
// wire when the service is slow, refusing, capped or gone.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Client } from '../index.js';
import { HANG, RESET, countingSockets, freePort, refusingPort, startFake } from './fake.js';

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

test('the deadline holds even over a request that goes silent when destroyed', async () => {
  // Node emits nothing more from a request whose socket it already gave
  // up on (an upgrade nobody handles was one): destroying it at the
  // deadline then ends nothing. Here destroy() is made a no-op, and the
  // call must still end at its deadline.
  const f = await fake(() => HANG);
  const ag = new Client({ baseUrl: f.url, timeoutMs: 100 });
  const destroy = http.ClientRequest.prototype.destroy;
  http.ClientRequest.prototype.destroy = function silent() {
    return this;
  };
  // Without the guard the call would never end: a net far past the
  // deadline turns that into a failure instead of a suite that hangs.
  let net;
  const never = new Promise((resolve) => {
    net = setTimeout(resolve, 10_000, { failed: 'never ended' });
  });
  let v;
  try {
    v = await Promise.race([ag.checkLogin(login), never]);
  } finally {
    clearTimeout(net);
    http.ClientRequest.prototype.destroy = destroy;
  }
  assert.equal(v.failed, 'timeout');
  assert.equal(v.outcome, 'allow');
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
  const { port, release } = await refusingPort();
  try {
    for (const retries of [0, 2]) {
      const ag = new Client({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 2000, retries });
      const { result, count } = await countingSockets(() => ag.checkLogin(login));
      assert.equal(result.failed, 'unavailable');
      assert.equal(result.outcome, 'allow');
      assert.equal(result.status, 0);
      assert.equal(count, retries + 1);
      ag.close();
    }
  } finally {
    release();
  }
});

test('retries never run past the deadline', async () => {
  // Every try is turned away unread (the connection cap's 503) and the
  // retries are many: only the deadline can stop them. The jitter is
  // pinned: no pause until the 8th try, then the whole of 20 ms times
  // 2^7, 2.56 s, which would end past the 2 s deadline. The client must
  // not take it: it ends at once, unavailable. Taking it would have run
  // into the deadline ("timeout"). No wall clock is judged.
  const f = await fake(() => ALLOW);
  f.capRefusals = Infinity;
  const ag = new Client({ baseUrl: f.url, timeoutMs: 2000, retries: 1000 });
  const random = Math.random;
  // Keyed on the tries the fake has seen, not on calls to Math.random,
  // which anything else in the process may make too.
  Math.random = () => (f.sockets.length < 8 ? 0 : 1 - Number.EPSILON);
  let v;
  try {
    v = await ag.checkLogin(login);
  } finally {
    Math.random = random;
  }
  assert.equal(v.failed, 'unavailable');
  assert.equal(v.status, 503);
  assert.equal(f.sockets.length, 8);
  assert.equal(f.requests.length, 0);
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
