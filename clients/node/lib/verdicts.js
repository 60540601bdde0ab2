// SPDX-License-Identifier: Apache-2.0
/**
 * What an answer (or its absence) means, per clients/README.md "Answers
 * to verdicts": turns a transport Outcome into a Verdict, a Report or a
 * UsageError. Pure functions, no I/O. The shapes they build, Verdict
 * and Report, are declared (and documented) once, in index.d.ts.
 */
import { UsageError } from './errors.js';

/**
 * The verdict of a check, or the UsageError to throw; `failed` tells
 * whether the service gave no usable answer (for the breaker).
 * @param {import('./transport.js').Outcome} got
 * @param {boolean} failOpen the fail mode of this kind of check
 * @returns {{verdict: object, failed: boolean} | {error: UsageError}}
 */
export function checkVerdict(got, failOpen) {
  if (got.kind !== 'answer') {
    return failedVerdict(got.kind, failOpen, got.status ?? 0, parseBody(got.text));
  }
  const body = parseBody(got.text);
  const { status } = got;
  if (status === 200) {
    // A 200 that is no JSON object is no allow of abuseguard's (a proxy's
    // page, say): no answer, and the fail mode decides.
    return body !== null
      ? { verdict: answered('allow', status, body, got.headers), failed: false }
      : failedVerdict('unavailable', failOpen, status, null);
  }
  // A 403 or 429 denies whatever its body, as a proxy's would.
  if (status === 429 || status === 403) {
    const outcome = status === 429 && body?.action === 'challenge' ? 'challenge' : 'deny';
    return { verdict: answered(outcome, status, body, got.headers), failed: false };
  }
  // A fail-closed policy while Redis is down: the service's own deny.
  if (isDegradedRefusal(status, body)) {
    return { verdict: answered('deny', status, body, got.headers), failed: false };
  }
  if (status < 500) {
    return { error: usageError(status, body, got.text) };
  }
  return failedVerdict('unavailable', failOpen, status, body);
}

/**
 * The verdict the client decides alone when the service gave none.
 * @param {'timeout'|'unavailable'|'breaker_open'} why
 * @param {boolean} failOpen
 * @param {number} status the HTTP status of an unusable answer, else 0
 * @param {object|null} body that answer's body, when it was JSON
 */
export function failedVerdict(why, failOpen, status = 0, body = null) {
  const outcome = failOpen ? 'allow' : 'deny';
  return {
    verdict: {
      outcome,
      allowed: failOpen,
      retryAfter: 0,
      policy: null,
      challengeNonce: null,
      device: null,
      degraded: false,
      failed: why,
      status,
      body,
    },
    failed: true,
  };
}

/**
 * The report's result, or the UsageError to throw.
 * @returns {{report: object, failed: boolean} | {error: UsageError}}
 */
export function reportResult(got) {
  if (got.kind !== 'answer') {
    return failedReport(got.kind, got.status ?? 0);
  }
  const { status } = got;
  const body = parseBody(got.text);
  if (status === 200 || status === 204) {
    const token = typeof body?.device_token === 'string' ? body.device_token : null;
    return {
      report: {
        recorded: true,
        deviceToken: token,
        expiresIn: token !== null && isCount(body.expires_in) ? body.expires_in : 0,
        failed: null,
        status,
      },
      failed: false,
    };
  }
  // The degraded 503 is the service's own answer (it is there, Redis is
  // not): nothing recorded, but the breaker hears an answer, as from a
  // check.
  if (isDegradedRefusal(status, body)) {
    return { report: failedReport('unavailable', status).report, failed: false };
  }
  if (status < 500) {
    return { error: usageError(status, body, got.text) };
  }
  return failedReport('unavailable', status);
}

/** The report of a call that got no answer: nothing recorded, no throw. */
export function failedReport(why, status = 0) {
  return {
    report: { recorded: false, deviceToken: null, expiresIn: 0, failed: why, status },
    failed: true,
  };
}

/**
 * What a range answer says of one SHA-1 suffix, and whether the service
 * answered at all (a 404 without a corpus is an answer; a 5xx is not).
 * @param {import('./transport.js').Outcome} got
 * @param {string} suffix the 35 upper-case hex digits after the prefix
 * @returns {{result: 'breached'|'clean'|'unknown', failed: boolean}}
 */
export function rangeResult(got, suffix) {
  if (got.kind !== 'answer') {
    return { result: 'unknown', failed: true };
  }
  if (got.status !== 200) {
    return { result: 'unknown', failed: got.status < 400 || got.status >= 500 };
  }
  for (const line of got.text.split('\n')) {
    const colon = line.indexOf(':');
    // Padding lines carry the count 0; only a real count means breached.
    if (colon > 0 && line.slice(0, colon).toUpperCase() === suffix) {
      const count = line.slice(colon + 1).trim();
      return { result: /^[0-9]+$/.test(count) && /[1-9]/.test(count) ? 'breached' : 'clean', failed: false };
    }
  }
  return { result: 'clean', failed: false };
}

function answered(outcome, status, parsed, headers) {
  const body = parsed ?? {};
  return {
    outcome,
    allowed: outcome === 'allow',
    retryAfter: outcome === 'allow' ? 0 : retryAfter(body, headers),
    policy: outcome !== 'allow' && typeof body.policy === 'string' ? body.policy : null,
    challengeNonce:
      outcome === 'challenge' && typeof body.challenge_nonce === 'string' ? body.challenge_nonce : null,
    device: body.device === 'trusted' || body.device === 'untrusted' ? body.device : null,
    degraded: body.degraded === true,
    failed: null,
    status,
    body: parsed,
  };
}

/** Whole seconds from the body, else from Retry-After, else 0 (unknown). */
function retryAfter(body, headers) {
  if (isCount(body.retry_after)) {
    return body.retry_after;
  }
  const header = headers?.['retry-after'];
  return typeof header === 'string' && /^[0-9]+$/.test(header) ? Number(header) : 0;
}

/** The 503 of a fail-closed policy while Redis is down. */
function isDegradedRefusal(status, body) {
  return status === 503 && body !== null && body.degraded === true;
}

/**
 * The error of a status below 500 that is no verdict or report: a 4xx
 * the service refused the request with (its body names the field), or
 * a status abuseguard never gives a check or report (a 1xx, a 3xx, an
 * unexpected 2xx: the base URL leads elsewhere), which must be loud and
 * names no field.
 */
function usageError(status, body, text) {
  if (status < 400) {
    return new UsageError(
      status,
      null,
      `the base URL answered ${status}, which abuseguard never does: does it lead to abuseguard?`,
    );
  }
  const field = typeof body?.field === 'string' ? body.field : null;
  const message =
    typeof body?.error === 'string' ? body.error : `abuseguard answered ${status}: ${text.slice(0, 200)}`;
  return new UsageError(status, field, message);
}

/** The body when it is a JSON object, else null (an HTML error page, say). */
function parseBody(text) {
  if (typeof text !== 'string' || text === '') {
    return null;
  }
  try {
    const body = JSON.parse(text);
    return body !== null && typeof body === 'object' && !Array.isArray(body) ? body : null;
  } catch {
    return null;
  }
}

function isCount(n) {
  return Number.isSafeInteger(n) && n >= 0;
}
