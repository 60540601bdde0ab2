// SPDX-License-Identifier: Apache-2.0
// The breached-password lookup against a fake range API: the tri-state
// answer, padding lines ignored, and nothing but 5 hex digits sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, UsageError } from '../index.js';
import { HANG, startFake } from './fake.js';

// SHA-1("password"), upper-case hex.
const PREFIX = '5BAA6';
const SUFFIX = '1E4C9B93F3F0682250B6CF8331B7EE68FD8';
const OTHER = '0018A45C4D1DEF81644B54AB7F969B88D65';

let fake;
let ag;
before(async () => {
  fake = await startFake(() => ({ status: 200, body: '' }));
  ag = new Client({ baseUrl: fake.url, timeoutMs: 2000 });
});
after(async () => {
  ag.close();
  await fake.close();
});

const range = (lines) => {
  fake.handler = () => ({ status: 200, body: lines.join('\r\n'), headers: { 'content-type': 'text/plain' } });
};

test('a suffix with a count above 0 is breached', async () => {
  range([`${OTHER}:2`, `${SUFFIX}:9545824`, `${'F'.repeat(35)}:0`]);
  assert.equal(await ag.breached('password'), 'breached');
});

test('the suffix matches in any case', async () => {
  range([`${SUFFIX.toLowerCase()}:3`]);
  assert.equal(await ag.breached('password'), 'breached');
});

test('a padding line (count 0) with the suffix is no breach: clean', async () => {
  range([`${OTHER}:2`, `${SUFFIX}:0`]);
  assert.equal(await ag.breached('password'), 'clean');
});

test('a range without the suffix, or an empty one, is clean', async () => {
  range([`${OTHER}:2`, `${'A'.repeat(35)}:0`]);
  assert.equal(await ag.breached('password'), 'clean');
  range([]);
  assert.equal(await ag.breached('password'), 'clean');
});

test('404 (no corpus) is unknown, not an error', async () => {
  fake.handler = () => ({ status: 404, body: { error: 'mode sha1: no SHA-1 corpus is loaded (--pwned-file)', field: 'mode' } });
  assert.equal(await ag.breached('password'), 'unknown');
});

test('a failure or a timeout is unknown', async () => {
  fake.handler = () => ({ status: 500, body: { error: 'x' } });
  assert.equal(await ag.breached('password'), 'unknown');
  fake.handler = () => HANG;
  assert.equal(await ag.breached('password', { timeoutMs: 50 }), 'unknown');
});

test('only the 5-digit prefix leaves, padded, by GET', async () => {
  range([]);
  fake.requests.length = 0;
  await ag.breached('password');
  const [req] = fake.requests;
  assert.equal(req.method, 'GET');
  assert.equal(req.url, `/range/${PREFIX}`);
  assert.equal(req.headers['add-padding'], 'true');
  assert.equal(req.text, '');
  const everything = JSON.stringify([req.url, req.headers]).toUpperCase();
  assert.ok(!everything.includes(SUFFIX));
  assert.ok(!everything.includes('PASSWORD'));
});

test('the password is hashed as UTF-8', async () => {
  fake.requests.length = 0;
  await ag.breached('Pässwörd1');
  // Python: hashlib.sha1('Pässwörd1'.encode()).hexdigest().upper()[:5]
  assert.equal(fake.requests[0].url, '/range/68347');
});

test('a password that is not a string is a usage error', async () => {
  await assert.rejects(ag.breached(12345), (e) => e instanceof UsageError && e.field === 'password');
});
