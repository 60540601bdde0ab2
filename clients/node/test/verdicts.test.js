// SPDX-License-Identifier: Apache-2.0
// Each answer of the service, through a real HTTP exchange with a fake
// service, becomes the Verdict, Report or UsageError clients/README.md
// says it does.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, UsageError } from '../index.js';
import { startFake } from './fake.js';

let fake;
let ag;
before(async () => {
  fake = await startFake(() => ({ status: 200, body: { allowed: true, device: 'untrusted', decisions: [] } }));
  ag = new Client({ baseUrl: fake.url, timeoutMs: 2000 });
});
after(async () => {
  ag.close();
  await fake.close();
});

const answer = (status, body, headers) => {
  fake.handler = () => ({ status, body, headers });
};
const login = { user: 'ana@example.com', ip: '203.0.113.7' };
const otp = { phone: '+14155550100', ip: '203.0.113.7' };

test('200 is allow, with the lane, and unknown fields kept in body only', async () => {
  answer(200, { allowed: true, device: 'trusted', decisions: [], surprise: { nested: [1, 2] } });
  const v = await ag.checkLogin(login);
  assert.deepEqual(
    { ...v, body: undefined },
    {
      outcome: 'allow',
      allowed: true,
      retryAfter: 0,
      policy: null,
      challengeNonce: null,
      device: 'trusted',
      degraded: false,
      failed: null,
      status: 200,
      body: undefined,
    },
  );
  assert.deepEqual(v.body.surprise, { nested: [1, 2] });
});

test('200 degraded is an allow that says degraded', async () => {
  answer(200, { allowed: true, device: 'untrusted', degraded: true, decisions: [] });
  const v = await ag.checkLogin(login);
  assert.equal(v.outcome, 'allow');
  assert.equal(v.degraded, true);
  assert.equal(v.failed, null);
});

test('429 challenge carries the nonce to bring back', async () => {
  const nonce = 'c1.axZCyF8MKp4bfUw2AAAAAAAAEmf5rHPxAuYX5suLQ-OgtljQ';
  answer(429, {
    allowed: false,
    policy: 'login.user_ip',
    action: 'challenge',
    retry_after: 900,
    challenge_nonce: nonce,
    device: 'untrusted',
    decisions: [],
  });
  const v = await ag.checkLogin(login);
  assert.equal(v.outcome, 'challenge');
  assert.equal(v.allowed, false);
  assert.equal(v.retryAfter, 900);
  assert.equal(v.policy, 'login.user_ip');
  assert.equal(v.challengeNonce, nonce);
  assert.equal(v.status, 429);
});

test('429 deny has its policy and wait, and no nonce', async () => {
  answer(429, { allowed: false, policy: 'login.ip', action: 'deny', retry_after: 60, device: 'untrusted', decisions: [] });
  const v = await ag.checkLogin(login);
  assert.equal(v.outcome, 'deny');
  assert.equal(v.retryAfter, 60);
  assert.equal(v.policy, 'login.ip');
  assert.equal(v.challengeNonce, null);
});

test('429 without a JSON body (a proxy) is a deny that waits Retry-After', async () => {
  answer(429, 'slow down', { 'content-type': 'text/plain', 'retry-after': '7' });
  const v = await ag.checkLogin(login);
  assert.equal(v.outcome, 'deny');
  assert.equal(v.retryAfter, 7);
  assert.equal(v.body, null);
  assert.equal(v.failed, null);
});

test('403 deny-listed is a deny without a policy', async () => {
  answer(403, {
    allowed: false,
    list: 'deny',
    device: 'untrusted',
    decisions: [{ list: 'deny', id: 7, kind: 'ip', allowed: false }],
  });
  const v = await ag.checkLogin(login);
  assert.equal(v.outcome, 'deny');
  assert.equal(v.policy, null);
  assert.equal(v.retryAfter, 0);
  assert.equal(v.device, 'untrusted');
  assert.equal(v.status, 403);
});

test('503 with a degraded body is the service own deny, not a failure', async () => {
  answer(503, {
    allowed: false,
    reason: 'store_unavailable',
    policy: 'otp.phone',
    retry_after: 1,
    device: 'untrusted',
    degraded: true,
  });
  const v = await ag.checkOtp(otp);
  assert.equal(v.outcome, 'deny');
  assert.equal(v.degraded, true);
  assert.equal(v.failed, null);
  assert.equal(v.policy, 'otp.phone');
  assert.equal(v.retryAfter, 1);
});

test('another 5xx is unavailable: the fail mode decides, login open, OTP closed', async () => {
  answer(500, { error: 'boom' });
  const v = await ag.checkLogin(login);
  assert.equal(v.failed, 'unavailable');
  assert.equal(v.outcome, 'allow');
  assert.equal(v.status, 500);
  assert.equal(v.policy, null);
  assert.equal(v.device, null);
  answer(503, { error: 'not degraded' });
  const o = await ag.checkOtpVerify(otp);
  assert.equal(o.failed, 'unavailable');
  assert.equal(o.outcome, 'deny');
  assert.equal(o.allowed, false);
  assert.equal(o.status, 503);
});

test('a draining instance\'s 503 was never read: sent again', async () => {
  let n = 0;
  fake.handler = () => (n++ === 0
    ? { status: 503, body: { error: 'shutting down' }, headers: { connection: 'close' } }
    : { status: 200, body: { allowed: true, device: 'untrusted', decisions: [] } });
  const v = await ag.checkLogin(login);
  assert.equal(v.outcome, 'allow');
  assert.equal(v.failed, null);
  assert.equal(n, 2);
});

test('a 200 that is not JSON is no allow: unavailable', async () => {
  answer(200, '<html>proxy</html>', { 'content-type': 'text/html' });
  const v = await ag.checkOtp(otp);
  assert.equal(v.failed, 'unavailable');
  assert.equal(v.outcome, 'deny');
});

test('400 is thrown as a UsageError naming the field', async () => {
  answer(400, { error: 'ip is not a valid IPv4 or IPv6 address', field: 'ip' });
  await assert.rejects(ag.checkLogin({ user: 'ana@example.com', ip: 'nope' }), (e) => {
    assert.ok(e instanceof UsageError);
    assert.equal(e.status, 400);
    assert.equal(e.field, 'ip');
    assert.equal(e.message, 'ip is not a valid IPv4 or IPv6 address');
    return true;
  });
});

test('other 4xx are usage errors too, never a fail open; no JSON, no field', async () => {
  for (const status of [401, 404, 405, 413, 415, 431]) {
    answer(status, '<html>no</html>', { 'content-type': 'text/html' });
    await assert.rejects(ag.checkLogin(login), (e) => e instanceof UsageError && e.status === status && e.field === null);
  }
  answer(400, { error: 'user is required', field: 'user' });
  await assert.rejects(ag.reportOtp({ ...otp, verified: true }), (e) => e.status === 400 && e.field === 'user');
});

test('a status abuseguard never gives a check (1xx, 3xx, another 2xx) is a usage error without field', async () => {
  // A base URL that leads elsewhere must be loud: never the fail mode.
  for (const status of [201, 202, 206, 301, 302, 304, 307, 308]) {
    answer(status, { error: 'elsewhere', field: 'user' }, status >= 300 ? { location: '/elsewhere' } : {});
    await assert.rejects(ag.checkLogin(login), (e) => {
      assert.ok(e instanceof UsageError, `${status}: ${e}`);
      assert.equal(e.status, status);
      assert.equal(e.field, null);
      return true;
    });
  }
  fake.handler = () => ({ raw: 'HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n' });
  await assert.rejects(ag.checkOtp(otp), (e) => e instanceof UsageError && e.status === 101 && e.field === null);
  fake.handler = () => ({ raw: 'HTTP/1.1 101 Switching Protocols\r\n\r\n' });
  await assert.rejects(ag.checkOtp(otp), (e) => e instanceof UsageError && e.status === 101 && e.field === null);
});

test('a status abuseguard never gives a report is a usage error without field', async () => {
  for (const status of [201, 202, 302]) {
    answer(status, { error: 'elsewhere', field: 'user' });
    await assert.rejects(
      ag.reportLogin({ ...login, success: true }),
      (e) => e instanceof UsageError && e.status === status && e.field === null,
    );
  }
});

test('a degraded 503 to a report: nothing recorded, no throw', async () => {
  answer(503, { allowed: false, reason: 'store_unavailable', degraded: true });
  const r = await ag.reportOtp({ ...otp, verified: true });
  assert.deepEqual(r, { recorded: false, deviceToken: null, expiresIn: 0, failed: 'unavailable', status: 503 });
});

test('a body over 64 KiB (UTF-8 bytes) is refused with 413 "body" and never sent', async () => {
  answer(200, { allowed: true, device: 'untrusted', decisions: [] });
  fake.requests.length = 0;
  const refused = (e) => e instanceof UsageError && e.status === 413 && e.field === 'body';
  for (const size of [2 << 20, 8 << 20]) {
    await assert.rejects(ag.checkLogin({ ...login, user: 'a'.repeat(size) }), refused);
    await assert.rejects(ag.reportLogin({ ...login, success: false, user: 'a'.repeat(size) }), refused);
  }
  // The cap is the service's: 65 536 bytes of body pass, one more does not.
  const frame = JSON.stringify({ user: '', ip: login.ip }).length;
  const exact = { user: 'a'.repeat(65536 - frame), ip: login.ip };
  assert.equal((await ag.checkLogin(exact)).outcome, 'allow');
  await assert.rejects(ag.checkLogin({ ...exact, user: `${exact.user}a` }), refused);
  // Bytes, not UTF-16 units: a "\u00e9" is two of them.
  const accented = { user: `${'a'.repeat(65536 - frame - 1)}\u00e9`, ip: login.ip };
  assert.equal(JSON.stringify(accented).length, 65536);
  await assert.rejects(ag.checkLogin(accented), refused);
  assert.equal(fake.requests.length, 1);
  assert.equal(Buffer.byteLength(fake.requests[0].text), 65536);
});

test('a string without a UTF-8 form (a lone surrogate) is refused under its wire name, never sent', async () => {
  answer(200, { allowed: true, device: 'untrusted', decisions: [] });
  fake.requests.length = 0;
  const refusedAs = (field) => (e) => e instanceof UsageError && e.status === 0 && e.field === field;
  await assert.rejects(ag.checkLogin({ ...login, user: 'ana\ud800' }), refusedAs('user'));
  await assert.rejects(ag.checkLogin({ ...login, deviceToken: '\udc00v1.x' }), refusedAs('device_token'));
  await assert.rejects(ag.reportOtp({ ...otp, verified: true, ref: 'r\ude00\ud83d' }), refusedAs('ref'));
  // Inside a value that is no string, the argument it is in is named.
  await assert.rejects(ag.checkOtp({ ...otp, user: { ['\ud800']: 1 } }), refusedAs('user'));
  assert.equal(fake.requests.length, 0);
  // A surrogate pair is one character, with a UTF-8 form: sent.
  assert.equal((await ag.checkLogin({ ...login, user: 'ana\ud83d\ude00' })).outcome, 'allow');
  assert.equal(fake.requests[0].json.user, 'ana\u{1f600}');
});

test('a success report brings back the nonce its check passed', async () => {
  // Issue 40: it proves the login to the user's usual places.
  answer(200, { device_token: 'v1.abc', expires_in: 60 });
  fake.requests.length = 0;
  await ag.reportLogin({ ...login, success: true, challengePassed: 'n1' });
  assert.equal(fake.requests[0].json.challenge_passed, 'n1');
});

test('report-login success returns the device token', async () => {
  answer(200, { device_token: 'v1.abc', expires_in: 7776000, extra: true });
  const r = await ag.reportLogin({ ...login, success: true });
  assert.deepEqual(r, { recorded: true, deviceToken: 'v1.abc', expiresIn: 7776000, failed: null, status: 200 });
});

test('report 204 is recorded without a token', async () => {
  answer(204, '');
  const r = await ag.reportLogin({ ...login, success: false, reason: 'bad_password' });
  assert.deepEqual(r, { recorded: true, deviceToken: null, expiresIn: 0, failed: null, status: 204 });
});

test('a report never throws for an outage', async () => {
  answer(502, 'bad gateway', { 'content-type': 'text/plain' });
  const r = await ag.reportOtp({ ...otp, verified: true });
  assert.deepEqual(r, { recorded: false, deviceToken: null, expiresIn: 0, failed: 'unavailable', status: 502 });
});

test('every argument travels under its wire name; null and undefined never', async () => {
  answer(200, { allowed: true, device: 'untrusted', decisions: [] });
  fake.requests.length = 0;
  await ag.checkLogin({
    user: 'ana@example.com',
    ip: '203.0.113.7',
    device: 'dev-1',
    deviceToken: 'v1.tok',
    passwordFp: 'ab'.repeat(32),
    passwordBreached: true,
    challengePassed: 'c1.nonce',
    ref: 'req-42',
  });
  await ag.checkLogin({ ...login, deviceToken: null, passwordFp: undefined, passwordBreached: null, ref: undefined });
  await ag.reportLogin({ ...login, success: false, reason: 'unknown_user', method: null });
  await ag.checkOtp({ ...otp, user: 'ana@example.com', challengePassed: null });
  const [full, sparse, report, otpCheck] = fake.requests;
  assert.deepEqual(full.json, {
    user: 'ana@example.com',
    ip: '203.0.113.7',
    device: 'dev-1',
    device_token: 'v1.tok',
    password_fp: 'ab'.repeat(32),
    password_breached: true,
    challenge_passed: 'c1.nonce',
    ref: 'req-42',
  });
  assert.deepEqual(sparse.json, login);
  assert.ok(!sparse.text.includes('null'));
  assert.deepEqual(report.json, { ...login, success: false, reason: 'unknown_user' });
  assert.deepEqual(otpCheck.json, { ...otp, user: 'ana@example.com' });
  assert.equal(full.url, '/check-login');
  assert.equal(full.headers['content-type'], 'application/json');
  assert.deepEqual(
    [report.url, otpCheck.url],
    ['/report-login', '/check-otp'],
  );
});

test('an unknown argument is refused before any request', async () => {
  fake.requests.length = 0;
  await assert.rejects(
    ag.checkLogin({ ...login, deviceTokn: 'v1.x' }),
    (e) => e instanceof UsageError && e.status === 0 && e.field === 'deviceTokn',
  );
  await assert.rejects(ag.checkOtp(undefined), (e) => e instanceof UsageError && e.field === 'args');
  await assert.rejects(ag.checkLogin(login, { timeout: 5 }), (e) => e instanceof UsageError && e.field === 'timeout');
  await assert.rejects(ag.breached('pw', { timeoutMs: -1 }), (e) => e instanceof UsageError && e.field === 'timeoutMs');
  assert.equal(fake.requests.length, 0);
});

test('a base URL path prefixes every route', async () => {
  answer(204, '');
  const prefixed = new Client({ baseUrl: `${fake.url}/guard/` });
  fake.requests.length = 0;
  await prefixed.reportOtp({ ...otp, verified: false });
  prefixed.close();
  assert.equal(fake.requests[0].url, '/guard/report-otp');
});

test('options are checked: unknown names and bad values are usage errors', () => {
  assert.throws(() => new Client({}), (e) => e instanceof UsageError && e.field === 'baseUrl');
  assert.throws(() => new Client({ baseUrl: 'ftp://x' }), (e) => e.field === 'baseUrl');
  assert.throws(() => new Client({ baseUrl: fake.url, timeout: 5 }), (e) => e.field === 'timeout');
  assert.throws(() => new Client({ baseUrl: fake.url, timeoutMs: 0 }), (e) => e.field === 'timeoutMs');
  assert.throws(() => new Client({ baseUrl: fake.url, retries: 1.5 }), (e) => e.field === 'retries');
  assert.throws(() => new Client({ baseUrl: fake.url, breakerFailures: 0 }), (e) => e.field === 'breakerFailures');
  assert.throws(() => new Client({ baseUrl: fake.url, failOpenOtp: 'yes' }), (e) => e.field === 'failOpenOtp');
  assert.throws(() => new Client({ baseUrl: fake.url, clock: 5 }), (e) => e.field === 'clock');
  new Client({ baseUrl: new URL(fake.url), timeoutMs: undefined }).close();
});
