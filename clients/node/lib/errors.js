// SPDX-License-Identifier: Apache-2.0
/**
 * The one error this package throws: a call abuseguard refused as
 * malformed (a 4xx other than 403 and 429), an answer that is not
 * abuseguard's (a 1xx, a 3xx, an unexpected 2xx: the base URL leads
 * elsewhere; no field), or an input refused here before any request:
 * status 0 for an argument or option (a lone surrogate too, under the
 * argument's wire name), 413 with field "body" for a body over the
 * service's 64 KiB cap. Never thrown for an outage: those become a
 * Verdict or Report with `failed` set, because an attacker can provoke a
 * 400 at will and must not be able to turn it into a fail-open.
 */
export class UsageError extends Error {
  /**
   * @param {number} status the HTTP status, or 0 when refused locally
   *   (413 for a body over the service's cap, as the service would say)
   * @param {string|null} field the field at fault, as the service names it
   * @param {string} message the service's sentence, or ours
   */
  constructor(status, field, message) {
    super(message);
    this.name = 'UsageError';
    /** The HTTP status; 0 (or 413 for the body's size) when the client
     * refused before sending. */
    this.status = status;
    /** The field at fault (the body's `field`), or null when not named. */
    this.field = field;
  }
}
