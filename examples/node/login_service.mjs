// SPDX-License-Identifier: Apache-2.0
// A demo login service guarded by abuseguard: the three-line integration
// (check before the password, report after it, keep the device cookie)
// and the OTP send/verify pair. Standard library and the client only.
//
//   ABUSEGUARD_URL=http://127.0.0.1:8080 PORT=3000 FP_KEY_HEX=<64 hex> \
//   TRUSTED_PROXIES= COOKIE_SECURE=0 node examples/node/login_service.mjs
import http from 'node:http';
import { randomBytes, randomInt, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import {
  Client,
  UsageError,
  clientIp,
  deviceCookie,
  deviceTokenFromCookies,
  passwordFingerprint,
} from '../../clients/node/index.js';

const env = process.env;
const ag = new Client({ baseUrl: env.ABUSEGUARD_URL });
const fpKey = Buffer.from(env.FP_KEY_HEX ?? '', 'hex');
if (fpKey.length < 32) {
  console.error('FP_KEY_HEX must hold 64 hex digits (a 32-byte key)');
  process.exit(2);
}
const trusted = (env.TRUSTED_PROXIES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
clientIp('127.0.0.1', {}, trusted); // a bad CIDR stops the start, not a request
const secureCookie = env.COOKIE_SECURE !== '0';

// Passwords kept as salted scrypt hashes, as a real user store would.
const scryptAsync = promisify(scrypt);
const hash = (password, salt) => scryptAsync(password, salt, 32);
const users = new Map();
for (const [user, password, phone] of [
  ['ana@example.com', 'correct horse battery staple', '+14155550100'],
  ['bob@example.com', 'Tr0ub4dor&3', '+14155550101'],
]) {
  const salt = randomBytes(16);
  users.set(user, { salt, hash: await hash(password, salt), phone });
}
const decoy = { salt: randomBytes(16), hash: Buffer.alloc(32) };
const otpCodes = new Map(); // phone -> the code sent (a demo: in memory)

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function refuse(res, error, verdict) {
  const wait = Math.max(1, verdict.retryAfter);
  send(res, 429, { error, retry_after: wait }, { 'retry-after': String(wait) });
}

async function login(req, res, body, ip) {
  const { user, password } = body;
  const passwordFp = passwordFingerprint(fpKey, password);
  const passwordBreached = (await ag.breached(password)) === 'breached' ? true : undefined;
  const deviceToken = deviceTokenFromCookies(req.headers.cookie, user);
  // Only a nonce is passed on, never `true`: a flag the browser sets
  // proves nothing (a real service verifies its second factor here).
  const challengePassed = typeof body.challenge_passed === 'string' ? body.challenge_passed : undefined;
  const verdict = await ag.checkLogin({ user, ip, deviceToken, passwordFp, passwordBreached, challengePassed });
  if (verdict.outcome === 'deny') {
    return refuse(res, 'too many attempts', verdict);
  }
  if (verdict.outcome === 'challenge') {
    return send(res, 401, { error: 'second factor required', challenge_nonce: verdict.challengeNonce });
  }
  const account = users.get(user);
  // An unknown user costs the same hash, so timing does not tell who exists.
  const given = await hash(password, (account ?? decoy).salt);
  if (!account || !timingSafeEqual(given, account.hash)) {
    const reason = account ? 'bad_password' : 'unknown_user';
    await ag.reportLogin({ user, ip, success: false, reason, passwordFp, deviceToken });
    return send(res, 401, { error: 'wrong user or password' });
  }
  const report = await ag.reportLogin({ user, ip, success: true, passwordFp, passwordBreached, deviceToken });
  const headers = {};
  if (report.deviceToken) {
    headers['set-cookie'] = deviceCookie(user, report.deviceToken, report.expiresIn, secureCookie).header;
  }
  send(res, 200, { ok: true, breached: passwordBreached === true }, headers);
}

async function otpSend(req, res, body, ip) {
  const verdict = await ag.checkOtp({ phone: body.phone, ip });
  if (!verdict.allowed) {
    return refuse(res, 'try later', verdict);
  }
  // A demo: a real service sends the code by SMS and never returns it.
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  otpCodes.set(body.phone, code);
  send(res, 200, { sent: true, code });
}

async function otpVerify(req, res, body, ip) {
  const verdict = await ag.checkOtpVerify({ phone: body.phone, ip });
  if (!verdict.allowed) {
    return refuse(res, 'try later', verdict);
  }
  const want = otpCodes.get(body.phone);
  // Compared as UTF-8 bytes, lengths first: timingSafeEqual throws on
  // buffers of different lengths, and a code of six characters is not
  // six bytes when one of them is not ASCII ("12345\u00e9").
  const given = Buffer.from(typeof body.code === 'string' ? body.code : '', 'utf8');
  const wanted = Buffer.from(want ?? '', 'utf8');
  const right =
    typeof want === 'string' &&
    typeof body.code === 'string' &&
    given.length === wanted.length &&
    timingSafeEqual(given, wanted);
  if (!right) {
    return send(res, 401, { error: 'wrong code' });
  }
  otpCodes.delete(body.phone);
  await ag.reportOtp({ phone: body.phone, ip, verified: true });
  send(res, 200, { ok: true });
}

const routes = { '/login': login, '/otp/send': otpSend, '/otp/verify': otpVerify };

async function readJson(req) {
  let text = '';
  req.setEncoding('utf8');
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 65536) {
      return null;
    }
  }
  try {
    const body = JSON.parse(text);
    return body !== null && typeof body === 'object' && !Array.isArray(body) ? body : null;
  } catch {
    return null;
  }
}

const server = http.createServer(async (req, res) => {
  const route = routes[req.url];
  if (req.method !== 'POST' || !route) {
    return send(res, 404, { error: 'not found' });
  }
  const body = await readJson(req);
  if (body === null) {
    return send(res, 400, { error: 'invalid request' });
  }
  const ip = clientIp(req.socket.remoteAddress ?? '', req.headers, trusted, 'x-forwarded-for');
  try {
    await route(req, res, body, ip);
  } catch (e) {
    // A usage error is the caller's bad input (a user that is no string,
    // a phone that is no number): never a reason to let the login through.
    if (e instanceof UsageError) {
      return send(res, 400, { error: 'invalid request' });
    }
    console.error(e);
    send(res, 500, { error: 'internal error' });
  }
});

server.listen(Number(env.PORT), '127.0.0.1', () => {
  // The port bound: the one asked for, or the system's pick for PORT=0.
  process.stdout.write(`listening on 127.0.0.1:${server.address().port}\n`);
});
