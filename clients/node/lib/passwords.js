// SPDX-License-Identifier: Apache-2.0
/**
 * What a backend derives from a password before anything leaves the
 * process: the keyed fingerprint abuseguard's spray policy counts, and
 * the SHA-1 range split of a breached-password lookup (only the first 5
 * hex digits are sent).
 */
import { createHash, createHmac } from 'node:crypto';
import { UsageError } from './errors.js';

/** The shortest fingerprint key: a key an attacker could guess would let
 * them test passwords against fingerprints offline. */
const MIN_KEY_BYTES = 32;

/**
 * The password fingerprint: lower-case hex of HMAC-SHA-256 keyed by
 * `key` over the password's UTF-8 bytes exactly as typed (no Unicode
 * normalisation: the same keystrokes give the same fingerprint, and a
 * normalisation would make two passwords one).
 * @param {Uint8Array} key at least 32 bytes, the same for every user
 * @param {string} password
 * @returns {string} 64 lower-case hex digits
 * @throws {UsageError} status 0, field "key" for a key under 32 bytes
 */
export function passwordFingerprint(key, password) {
  if (!(key instanceof Uint8Array) || key.length < MIN_KEY_BYTES) {
    throw new UsageError(0, 'key', `key must be at least ${MIN_KEY_BYTES} bytes`);
  }
  if (typeof password !== 'string') {
    throw new UsageError(0, 'password', 'password must be a string');
  }
  return createHmac('sha256', key).update(password, 'utf8').digest('hex');
}

/**
 * The range lookup's halves of SHA-1 of the UTF-8 password, upper-case
 * hex: the 5-digit prefix to send and the 35-digit suffix to find.
 * @param {string} password
 * @returns {{prefix: string, suffix: string}}
 */
export function rangeSplit(password) {
  if (typeof password !== 'string') {
    throw new UsageError(0, 'password', 'password must be a string');
  }
  const hash = createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
  return { prefix: hash.slice(0, 5), suffix: hash.slice(5) };
}
