// SPDX-License-Identifier: Apache-2.0
/**
 * The device-token cookie: one per account, so that two accounts signed
 * in from one browser do not overwrite each other's trust. Its name is a
 * digest of the account, so the cookie does not tell who logged in.
 */
import { createHash } from 'node:crypto';
import { UsageError } from './errors.js';

/** RFC 6265 cookie-octets: what a value may hold unquoted. A token with
 * anything else (";", a space, a CR) could inject attributes or headers. */
const COOKIE_VALUE = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/;

/**
 * The cookie name of one account: "ag_device_" and the first 16 hex
 * digits of SHA-256 of "abuseguard-device:" + userId (UTF-8).
 * @param {string} userId
 * @returns {string}
 */
export function deviceCookieName(userId) {
  if (typeof userId !== 'string') {
    throw new UsageError(0, 'userId', 'userId must be a string');
  }
  const digest = createHash('sha256').update(`abuseguard-device:${userId}`, 'utf8').digest('hex');
  return `ag_device_${digest.slice(0, 16)}`;
}

/**
 * The Set-Cookie value that keeps a device token:
 * `<name>=<token>; Max-Age=<maxAge>; Path=/; HttpOnly; SameSite=Lax`,
 * and `; Secure` unless `secure` is false (plain-HTTP demos only).
 * @param {string} userId
 * @param {string} token the Report's deviceToken
 * @param {number} maxAge seconds: the Report's expiresIn
 * @param {boolean} [secure]
 * @returns {{name: string, header: string}}
 * @throws {UsageError} status 0 for a token that is not a cookie value,
 *   or a maxAge that is not a whole number of seconds
 */
export function deviceCookie(userId, token, maxAge, secure = true) {
  if (typeof token !== 'string' || !COOKIE_VALUE.test(token)) {
    throw new UsageError(0, 'token', 'token must be a non-empty cookie value');
  }
  if (!Number.isSafeInteger(maxAge) || maxAge < 0) {
    throw new UsageError(0, 'maxAge', 'maxAge must be a whole number of seconds');
  }
  const name = deviceCookieName(userId);
  const header = `${name}=${token}; Max-Age=${maxAge}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
  return { name, header };
}

/**
 * The account's device token in a Cookie header, or null.
 * @param {string|null|undefined} cookieHeader the request's Cookie header
 * @param {string} userId
 * @returns {string|null} the first cookie of that name; null when absent
 *   or empty
 */
export function deviceTokenFromCookies(cookieHeader, userId) {
  const name = deviceCookieName(userId);
  if (typeof cookieHeader !== 'string') {
    return null;
  }
  for (const pair of cookieHeader.split(';')) {
    const eq = pair.indexOf('=');
    if (eq >= 0 && pair.slice(0, eq).trim() === name) {
      let value = pair.slice(eq + 1).trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
        value = value.slice(1, -1);
      }
      return value === '' ? null : value;
    }
  }
  return null;
}
