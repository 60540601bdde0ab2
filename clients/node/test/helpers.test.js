// SPDX-License-Identifier: Apache-2.0
// The helpers that need no service: fingerprints (against the shared
// vectors), the client address, the device cookie, webhook signatures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import {
  UsageError,
  clientIp,
  deviceCookie,
  deviceCookieName,
  deviceTokenFromCookies,
  passwordFingerprint,
  verifyWebhook,
} from '../index.js';

const vectors = JSON.parse(
  readFileSync(new URL('../../../tests/conformance/vectors.json', import.meta.url), 'utf8'),
);

test('password fingerprints match every shared vector', () => {
  assert.ok(vectors.password_fingerprint.length >= 5);
  for (const v of vectors.password_fingerprint) {
    assert.equal(passwordFingerprint(Buffer.from(v.key_hex, 'hex'), v.password), v.fp, v.password);
    // A plain Uint8Array is a key as good as a Buffer.
    assert.equal(passwordFingerprint(new Uint8Array(Buffer.from(v.key_hex, 'hex')), v.password), v.fp);
  }
});

test('a fingerprint key under 32 bytes is a usage error naming key', () => {
  for (const hex of vectors.short_keys) {
    assert.throws(
      () => passwordFingerprint(Buffer.from(hex, 'hex'), 'pw'),
      (e) => e instanceof UsageError && e.status === 0 && e.field === 'key',
    );
  }
  assert.throws(() => passwordFingerprint('a'.repeat(64), 'pw'), (e) => e.field === 'key');
  assert.throws(() => passwordFingerprint(Buffer.alloc(32), 42), (e) => e.field === 'password');
});

test('the password is taken as typed: no Unicode normalisation', () => {
  const key = Buffer.alloc(32, 7);
  assert.notEqual(passwordFingerprint(key, 'P\u00e4ss'), passwordFingerprint(key, 'Pa\u0308ss'));
});

const PROXIES = ['10.0.0.0/8', '2001:db8:ffff::/48', '192.0.2.1'];
const ip = (remote, headers, header) => clientIp(remote, headers, PROXIES, header);

test('an untrusted peer is the answer, whatever it forwards', () => {
  assert.equal(ip('203.0.113.7', { 'x-forwarded-for': '1.2.3.4' }), '203.0.113.7');
  assert.equal(ip('::ffff:203.0.113.7', {}), '203.0.113.7');
  assert.equal(ip('2001:DB8:0:0::7', {}), '2001:db8::7');
  assert.equal(ip('fe80::1%eth0', {}), 'fe80::1');
  assert.equal(ip('not an address', {}), 'not an address');
});

test('behind trusted proxies, X-Forwarded-For is walked from the right', () => {
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, 10.0.0.2' }), '198.51.100.1');
  // The attacker's own leftmost entries are never reached.
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '6.6.6.6, 198.51.100.1, 10.0.0.2' }), '198.51.100.1');
  assert.equal(ip('192.0.2.1', { 'x-forwarded-for': '198.51.100.9' }), '198.51.100.9');
  assert.equal(ip('10.0.0.1', {}), '10.0.0.1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '' }), '10.0.0.1');
});

test('all trusted: the leftmost', () => {
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '10.9.9.9, 10.0.0.2' }), '10.9.9.9');
});

test('a garbage entry ends the walk at the last trusted address', () => {
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, unknown, 10.0.0.2' }), '10.0.0.2');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, bogus' }), '10.0.0.1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, 1.2.3.256' }), '10.0.0.1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, 01.2.3.4' }), '10.0.0.1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, 1::2::3' }), '10.0.0.1');
});

test('ports and brackets are stripped, mapped IPv4 is IPv4, IPv6 is canonical', () => {
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '[2001:DB8::1]:4711' }), '2001:db8::1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '[2001:db8::1]' }), '2001:db8::1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.4:80' }), '198.51.100.4');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '::ffff:198.51.100.4' }), '198.51.100.4');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '[::ffff:c633:6404]:443' }), '198.51.100.4');
  assert.equal(ip('::ffff:10.0.0.1', { 'x-forwarded-for': '198.51.100.4' }), '198.51.100.4');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '2001:0db8:0000:0000:0000:0000:0000:0001' }), '2001:db8::1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '2001:db8:0:0:1:0:0:1' }), '2001:db8::1:0:0:1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '2001:db8:0:1:1:1:1:1' }), '2001:db8:0:1:1:1:1:1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '::' }), '::');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '1.2.3.4:http' }), '10.0.0.1');
});

test('IPv6 proxies by CIDR', () => {
  assert.equal(ip('2001:db8:ffff::5', { 'x-forwarded-for': '2001:db8:1::9, 2001:db8:ffff:0:1::1' }), '2001:db8:1::9');
});

test('Forwarded (RFC 7239): every for= of every element', () => {
  const h = (v) => ({ forwarded: v });
  const fwd = (remote, v) => ip(remote, h(v), 'forwarded');
  assert.equal(fwd('10.0.0.1', 'for=192.0.2.60;proto=http;by=203.0.113.43'), '192.0.2.60');
  assert.equal(fwd('10.0.0.1', 'for=198.51.100.17, For="[2001:db8:ffff::17]:4711"'), '198.51.100.17');
  assert.equal(fwd('10.0.0.1', 'for="[2001:db8:cafe::17]:4711"'), '2001:db8:cafe::17');
  assert.equal(fwd('10.0.0.1', 'proto=https;for="198.51.100.3;weird,quoted"'), '10.0.0.1');
  assert.equal(fwd('10.0.0.1', 'for=198.51.100.17, for=unknown'), '10.0.0.1');
  assert.equal(fwd('10.0.0.1', 'for=198.51.100.17, for=_hidden, for=10.0.0.3'), '10.0.0.3');
  assert.equal(fwd('10.0.0.1', 'by=10.0.0.1;proto=https'), '10.0.0.1');
  // Several header lines join with commas, in order.
  assert.equal(ip('10.0.0.1', { forwarded: ['for=198.51.100.5', 'for=10.0.0.7'] }, 'forwarded'), '198.51.100.5');
  // X-Forwarded-For is not read when Forwarded is the header named.
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.5' }, 'forwarded'), '10.0.0.1');
});

test('an IPv4 address in brackets is an address, as in Go and Python', () => {
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '[198.51.100.4]' }), '198.51.100.4');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '[198.51.100.4]:8080' }), '198.51.100.4');
  assert.equal(ip('10.0.0.1', { forwarded: 'for="[198.51.100.4]"' }, 'forwarded'), '198.51.100.4');
  assert.equal(ip('[10.0.0.1]:443', { forwarded: 'for="[198.51.100.4]:_x"' }, 'forwarded'), '198.51.100.4');
  // Trusted in brackets is trusted: the walk goes on past it.
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.4, [10.0.0.2]' }), '198.51.100.4');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.4, [1.2.3.4' }), '10.0.0.1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.4, [1.2.3.4]x' }), '10.0.0.1');
});

test("entries are read as Go's clientip.go reads them: space inside quotes, zones, escapes", () => {
  const fwd = (v) => ip('10.0.0.1', { forwarded: v }, 'forwarded');
  // Space inside the quotes is trimmed as around a bare entry (RFC 7239
  // would call it no node; Go trims it, and the three clients agree).
  assert.equal(fwd('for=" 198.51.100.4 "'), '198.51.100.4');
  assert.equal(fwd('for="\t[2001:db8::4]:80 "'), '2001:db8::4');
  assert.equal(fwd('for = "198.51.100.4" ; proto=https'), '198.51.100.4');
  // A quoted-pair is its character, even a line feed.
  assert.equal(fwd('for="\\1\\98.51.100.4"'), '198.51.100.4');
  assert.equal(fwd('for="\\\n198.51.100.4"'), '198.51.100.4');
  // Go's white space: U+0085 is, U+FEFF (which trim() strips) is not.
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '\u0085198.51.100.4\u3000' }), '198.51.100.4');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '\ufeff198.51.100.4' }), '10.0.0.1');
  // A zone runs to the end of the address, "%" and all.
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': 'fe80::9%a%b' }), 'fe80::9');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.4, fe80::9%' }), '10.0.0.1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.4, 1.2.3.4%eth0' }), '10.0.0.1');
  // RFC 4291: 1 to 4 hex digits a group (Go's net/netip takes more).
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.4, 00001::1' }), '10.0.0.1');
  // No header named is X-Forwarded-For, as in Go.
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': '198.51.100.4' }, ''), '198.51.100.4');
});

test('header names in any case, arrays of lines and WHATWG Headers', () => {
  assert.equal(ip('10.0.0.1', { 'X-Forwarded-For': '198.51.100.1' }), '198.51.100.1');
  assert.equal(ip('10.0.0.1', { 'x-forwarded-for': ['198.51.100.1', '10.0.0.9'] }), '198.51.100.1');
  assert.equal(ip('10.0.0.1', new Headers({ 'X-Forwarded-For': '198.51.100.2, 10.0.0.9' })), '198.51.100.2');
  assert.equal(ip('10.0.0.1', { 'x-real-ip': '198.51.100.3' }, 'X-Real-IP'), '198.51.100.3');
});

test('a trusted proxy that is no CIDR or address is a usage error', () => {
  for (const bad of ['10.0.0.0/33', 'nope', '10.0.0.0/8/1', '::/129', '10.0.0.0/08', 'fe80::%eth0/64', 42]) {
    assert.throws(() => clientIp('1.2.3.4', {}, [bad]), (e) => e instanceof UsageError && e.field === 'trustedProxies');
  }
  assert.throws(() => clientIp(undefined, {}, []), (e) => e.field === 'remoteAddr');
  // Blank entries are skipped (a split empty setting), a zone dropped.
  assert.equal(clientIp('10.0.0.1', { 'x-forwarded-for': '198.51.100.1' }, ['', ' 10.0.0.0/8 ']), '198.51.100.1');
  assert.equal(clientIp('fe80::1', { 'x-forwarded-for': '198.51.100.1' }, ['fe80::1%eth0']), '198.51.100.1');
  // A mapped prefix is the IPv4 range it maps.
  assert.equal(clientIp('10.1.2.3', { 'x-forwarded-for': '198.51.100.1' }, ['::ffff:10.0.0.0/104']), '198.51.100.1');
});

test('the device cookie name is the account digest', () => {
  assert.equal(deviceCookieName('ana@example.com'), 'ag_device_7c76ad47e1f78d6c');
  assert.equal(deviceCookieName('bob@example.com'), 'ag_device_e44f72ffa4b3b1da');
  assert.equal(deviceCookieName('Zoë@exämple.com'), 'ag_device_f7d19c1bef7c8a46');
});

test('the device cookie is HttpOnly, Lax, whole-site, and Secure unless told not', () => {
  assert.deepEqual(deviceCookie('ana@example.com', 'v1.AbC-_9', 7776000), {
    name: 'ag_device_7c76ad47e1f78d6c',
    header: 'ag_device_7c76ad47e1f78d6c=v1.AbC-_9; Max-Age=7776000; Path=/; HttpOnly; SameSite=Lax; Secure',
  });
  assert.equal(
    deviceCookie('ana@example.com', 'v1.x', 60, false).header,
    'ag_device_7c76ad47e1f78d6c=v1.x; Max-Age=60; Path=/; HttpOnly; SameSite=Lax',
  );
  for (const token of ['', 'a;b', 'a b', 'a\r\nSet-Cookie: x=y', 'a,b', null]) {
    assert.throws(() => deviceCookie('ana@example.com', token, 60), (e) => e.field === 'token');
  }
  assert.throws(() => deviceCookie('ana@example.com', 'v1.x', -1), (e) => e.field === 'maxAge');
  assert.throws(() => deviceCookie('ana@example.com', 'v1.x', 1.5), (e) => e.field === 'maxAge');
});

test("the token is read from that account's cookie only", () => {
  const ana = 'ag_device_7c76ad47e1f78d6c';
  const bob = 'ag_device_e44f72ffa4b3b1da';
  const header = `theme=dark; ${bob}=v1.bob; ${ana}=v1.ana`;
  assert.equal(deviceTokenFromCookies(header, 'ana@example.com'), 'v1.ana');
  assert.equal(deviceTokenFromCookies(header, 'bob@example.com'), 'v1.bob');
  assert.equal(deviceTokenFromCookies(header, 'eve@example.com'), null);
  assert.equal(deviceTokenFromCookies(`${ana}="v1.q"`, 'ana@example.com'), 'v1.q');
  assert.equal(deviceTokenFromCookies(`${ana}=`, 'ana@example.com'), null);
  assert.equal(deviceTokenFromCookies(`x${ana}=v1.no`, 'ana@example.com'), null);
  assert.equal(deviceTokenFromCookies(undefined, 'ana@example.com'), null);
  assert.equal(deviceTokenFromCookies(null, 'ana@example.com'), null);
  assert.equal(deviceTokenFromCookies('', 'ana@example.com'), null);
});

const SECRET = Buffer.from('whsec-test-secret-0123456789abcdef');
const BODY = '{"id":"1-0","type":"account_recovered"}';
const T = 1765000000;
const MAC = 'c3aa3dc6d1d2b85f716cbed18226a524cb76a47398beaf81c32436d5afaaf8d3';

test('a good webhook signature verifies, over a string or the raw bytes', () => {
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T},v1=${MAC}`, { now: T }), true);
  assert.equal(verifyWebhook(SECRET, Buffer.from(BODY), `t=${T},v1=${MAC}`, { now: T + 300 }), true);
  assert.equal(verifyWebhook(new Uint8Array(SECRET), BODY, `t=${T},v1=${MAC.toUpperCase()}`, { now: T - 300 }), true);
  assert.equal(verifyWebhook(SECRET.toString(), BODY, `v1=${MAC},t=${T}`, { now: T }), true);
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T},v1=${'0'.repeat(64)},v1=${MAC}`, { now: T }), true);
  // The default clock is the system's: a fresh signature verifies.
  const now = Math.floor(Date.now() / 1000);
  const mac = createHmac('sha256', SECRET).update(`${now}.${BODY}`).digest('hex');
  assert.equal(verifyWebhook(SECRET, BODY, `t=${now},v1=${mac}`), true);
});

test('a bad MAC, body or secret does not verify', () => {
  const bad = MAC.slice(0, -1) + (MAC.endsWith('3') ? '4' : '3');
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T},v1=${bad}`, { now: T }), false);
  assert.equal(verifyWebhook(SECRET, BODY + ' ', `t=${T},v1=${MAC}`, { now: T }), false);
  assert.equal(verifyWebhook(Buffer.from('another secret'), BODY, `t=${T},v1=${MAC}`, { now: T }), false);
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T + 1},v1=${MAC}`, { now: T }), false);
});

test('an old (or future) signature does not verify', () => {
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T},v1=${MAC}`, { now: T + 301 }), false);
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T},v1=${MAC}`, { now: T - 301 }), false);
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T},v1=${MAC}`, { now: T + 30, tolerance: 10 }), false);
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T},v1=${MAC}`, { now: T + 30, tolerance: 60 }), true);
});

test('a malformed header never verifies and never throws', () => {
  for (const header of [
    undefined,
    null,
    '',
    `v1=${MAC}`,
    `t=${T}`,
    `t=${T}`.replace('=', ':'),
    `t=${T},${MAC}`,
    `t=${T},v1=${MAC.slice(2)}`,
    `t=${T},v1=${MAC}zz`,
    `t= ${T},v1=${MAC}`,
    `t=-${T},v1=${MAC}`,
    `t=${T}.5,v1=${MAC}`,
    `t=${T},t=${T},v1=${MAC}`,
    `t=${T}, v1=${MAC}`,
    `sha256=${MAC}`,
  ]) {
    assert.equal(verifyWebhook(SECRET, BODY, header, { now: T }), false, String(header));
  }
  assert.equal(verifyWebhook(undefined, BODY, `t=${T},v1=${MAC}`, { now: T }), false);
  assert.equal(verifyWebhook(SECRET, { json: true }, `t=${T},v1=${MAC}`, { now: T }), false);
  assert.equal(verifyWebhook(SECRET, BODY, `t=${T},v1=${MAC}`, { now: 'soon' }), false);
});
