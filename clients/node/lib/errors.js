// SPDX-License-Identifier: Apache-2.0
/**
 * The one error this package throws: a call abuseguard refused as
 * malformed (a 4xx other than 403 and 429), or an argument refused here
 * before any request (status 0). Never thrown for an outage: those become
 * a Verdict or Report with `failed` set, because an attacker can provoke
 * a 400 at will and must not be able to turn it into a fail-open.
 */
export class UsageError extends Error {
  /**
   * @param {number} status the HTTP status, or 0 when refused locally
   * @param {string|null} field the field at fault, as the service names it
   * @param {string} message the service's sentence, or ours
   */
  constructor(status, field, message) {
    super(message);
    this.name = 'UsageError';
    /** The HTTP status, 0 when the client refused before sending. */
    this.status = status;
    /** The field at fault (the body's `field`), or null when not named. */
    this.field = field;
  }
}
