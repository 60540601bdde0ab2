// SPDX-License-Identifier: Apache-2.0
// The Node.js client's conformance driver (clients/README.md, "The
// conformance driver"): one JSON request a line on stdin, one JSON
// answer a line on stdout, in order. Arguments arrive under their wire
// names and reach the client under its own; an argument not given is
// not passed.
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import {
  Client,
  UsageError,
  clientIp,
  deviceCookie,
  deviceCookieName,
  deviceTokenFromCookies,
  passwordFingerprint,
  verifyWebhook,
} from '../../clients/node/index.js';

let client = null;
let offsetMs = 0;

/** snake_case wire names to the client's camelCase ones. */
function camel(args) {
  const out = {};
  for (const [key, value] of Object.entries(args)) {
    out[key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())] = value;
  }
  return out;
}

function verdict(v) {
  const { outcome, allowed, retryAfter, policy, challengeNonce, device, degraded, failed, status } = v;
  return {
    outcome,
    allowed,
    retry_after: retryAfter,
    policy,
    challenge_nonce: challengeNonce,
    device,
    degraded,
    failed,
    status,
  };
}

function report(r) {
  return {
    recorded: r.recorded,
    device_token: r.deviceToken,
    expires_in: r.expiresIn,
    failed: r.failed,
    status: r.status,
  };
}

const OPS = {
  new_client(a) {
    client?.close();
    const { baseUrl, ...rest } = camel(a);
    client = new Client({ baseUrl, ...rest, clock: () => performance.now() + offsetMs });
    return null;
  },
  advance_clock({ ms }) {
    offsetMs += ms;
    return null;
  },
  check_login: async (a) => verdict(await client.checkLogin(camel(a))),
  check_otp: async (a) => verdict(await client.checkOtp(camel(a))),
  check_otp_verify: async (a) => verdict(await client.checkOtpVerify(camel(a))),
  report_login: async (a) => report(await client.reportLogin(camel(a))),
  report_otp: async (a) => report(await client.reportOtp(camel(a))),
  breached: ({ password, timeout_ms }) =>
    client.breached(password, timeout_ms === undefined ? {} : { timeoutMs: timeout_ms }),
  password_fingerprint({ key_hex, password }) {
    try {
      return passwordFingerprint(Buffer.from(key_hex, 'hex'), password);
    } catch (e) {
      if (e instanceof UsageError && e.field === 'key') {
        return { error: 'key' };
      }
      throw e;
    }
  },
  client_ip: ({ remote_addr, headers, trusted_proxies, header }) =>
    header === undefined
      ? clientIp(remote_addr, headers, trusted_proxies)
      : clientIp(remote_addr, headers, trusted_proxies, header),
  device_cookie({ user_id, token, max_age, secure }) {
    const { name, header } = deviceCookie(user_id, token, max_age, secure);
    return { name, set_cookie: header };
  },
  device_cookie_name: ({ user_id }) => deviceCookieName(user_id),
  device_token_from_cookies: ({ cookie_header, user_id }) => deviceTokenFromCookies(cookie_header, user_id),
  verify_webhook: ({ secret_hex, body, header, now, tolerance }) =>
    verifyWebhook(Buffer.from(secret_hex, 'hex'), body, header, tolerance === undefined ? { now } : { now, tolerance }),
};

async function answer(line) {
  const { id, op, args = {} } = JSON.parse(line);
  try {
    const run = OPS[op];
    if (!run) {
      throw new Error(`unknown op ${op}`);
    }
    return { id, result: await run(args) };
  } catch (e) {
    if (e instanceof UsageError) {
      return { id, usage_error: { status: e.status, field: e.field } };
    }
    // A driver bug: said on the line, so the suite shows it instead of
    // waiting for an answer that never comes.
    return { id, error: String(e?.message ?? e) };
  }
}

// One request at a time, in order: each waits for the one before it.
let queue = Promise.resolve();
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (line.trim() !== '') {
    queue = queue.then(async () => process.stdout.write(`${JSON.stringify(await answer(line))}\n`));
  }
});
lines.on('close', () => queue.then(() => client?.close()));
