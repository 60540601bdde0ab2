// SPDX-License-Identifier: Apache-2.0
/**
 * Verifying abuseguard's webhook deliveries (docs/events.md, "Webhooks"):
 * `X-Abuseguard-Signature: t=<unix s>,v1=<hex>`, the HMAC-SHA-256 of
 * "<t>.<body>" keyed by the webhook secret file's bytes. The time is
 * signed with the body, so a recorded delivery replays for `tolerance`
 * seconds at most (dedupe on the event's `id` within them).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Five minutes, as the service's documentation asks. */
const DEFAULT_TOLERANCE_S = 300;

/**
 * Whether a delivery is abuseguard's and recent. Verify before parsing
 * the body, and over the body's bytes exactly as received.
 * @param {Uint8Array|string} secret the webhook secret file's raw bytes
 * @param {Uint8Array|string} body the raw request body
 * @param {string|null|undefined} header the X-Abuseguard-Signature value
 * @param {{now?: number, tolerance?: number}} [options] now: Unix
 *   seconds (default: the system clock); tolerance: seconds either way
 * @returns {boolean} false for anything malformed, never a throw
 */
export function verifyWebhook(secret, body, header, { now = Date.now() / 1000, tolerance = DEFAULT_TOLERANCE_S } = {}) {
  if (typeof header !== 'string' || !isBytes(secret) || !isBytes(body)) {
    return false;
  }
  let t = null;
  const macs = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) {
      return false;
    }
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === 't') {
      if (t !== null || !/^[0-9]{1,15}$/.test(value)) {
        return false;
      }
      t = value;
    } else if (key === 'v1') {
      macs.push(value);
    }
  }
  if (t === null || macs.length === 0 || !(Math.abs(now - Number(t)) <= tolerance)) {
    return false;
  }
  const want = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
  // As in Stripe's scheme, which this one follows, other keys are
  // ignored and any v1 may match; each is compared in constant time.
  return macs.some((mac) => {
    if (!/^[0-9a-fA-F]{64}$/.test(mac)) {
      return false;
    }
    return timingSafeEqual(want, Buffer.from(mac, 'hex'));
  });
}

function isBytes(x) {
  return typeof x === 'string' || x instanceof Uint8Array;
}
