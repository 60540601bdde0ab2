// SPDX-License-Identifier: Apache-2.0
/**
 * The abuseguard client: the calls of clients/README.md over one
 * keep-alive pool, one breaker and one set of fail modes. A Client is
 * meant to live as long as the process (make one, share it); `close()`
 * drops its pooled sockets.
 *
 * Every call resolves for an outage (a Verdict or Report with `failed`
 * set) and rejects only with a UsageError (the request was refused as
 * malformed, here or by the service, or the base URL answered as
 * abuseguard never does) or with the caller's own AbortSignal reason; it
 * never throws synchronously.
 */
import { performance } from 'node:perf_hooks';
import { Breaker } from './breaker.js';
import { UsageError } from './errors.js';
import { rangeSplit } from './passwords.js';
import { Transport } from './transport.js';
import { checkVerdict, failedReport, failedVerdict, rangeResult, reportResult } from './verdicts.js';

/** The options and their defaults (clients/README.md, "Client options"). */
const DEFAULTS = {
  baseUrl: undefined,
  timeoutMs: 500,
  failOpenLogin: true,
  failOpenOtp: false,
  breakerFailures: 5,
  breakerOpenMs: 10_000,
  retries: 2,
  idleTimeoutMs: 5_000,
  clock: () => performance.now(),
};

/** The arguments of each call, in the caller's names; the wire names are
 * their snake_case forms. One table, so a field cannot be added to one
 * spelling and forgotten in the other. */
const ARGS = {
  checkLogin: ['user', 'ip', 'device', 'deviceToken', 'passwordFp', 'passwordBreached', 'challengePassed', 'ref'],
  reportLogin: ['user', 'ip', 'success', 'reason', 'method', 'passwordFp', 'passwordBreached', 'deviceToken', 'challengePassed', 'ref'],
  checkOtp: ['phone', 'ip', 'user', 'deviceToken', 'challengePassed', 'ref'],
  reportOtp: ['phone', 'ip', 'verified', 'user', 'deviceToken', 'ref'],
};

export class Client {
  #transport;
  #breaker;
  #timeoutMs;
  #retries;
  #failOpenLogin;
  #failOpenOtp;

  /**
   * @param {object} options only `baseUrl` is required; see index.d.ts
   * @throws {UsageError} status 0 for an unknown option or a bad value
   */
  constructor(options) {
    const o = { ...DEFAULTS };
    for (const [key, value] of Object.entries(options ?? {})) {
      if (!(key in DEFAULTS)) {
        throw new UsageError(0, key, `unknown option ${key}`);
      }
      if (value !== undefined) {
        o[key] = value;
      }
    }
    const url = parseBaseUrl(o.baseUrl);
    requireNumber('timeoutMs', o.timeoutMs, 1);
    requireNumber('breakerOpenMs', o.breakerOpenMs, 0);
    requireNumber('idleTimeoutMs', o.idleTimeoutMs, 1);
    requireInteger('breakerFailures', o.breakerFailures, 1);
    requireInteger('retries', o.retries, 0);
    for (const key of ['failOpenLogin', 'failOpenOtp']) {
      if (typeof o[key] !== 'boolean') {
        throw new UsageError(0, key, `${key} must be true or false`);
      }
    }
    if (typeof o.clock !== 'function') {
      throw new UsageError(0, 'clock', 'clock must be a function returning milliseconds');
    }
    this.#transport = new Transport(url, o.idleTimeoutMs);
    this.#breaker = new Breaker(o.breakerFailures, o.breakerOpenMs, o.clock);
    this.#timeoutMs = o.timeoutMs;
    this.#retries = o.retries;
    this.#failOpenLogin = o.failOpenLogin;
    this.#failOpenOtp = o.failOpenOtp;
  }

  /** Before verifying a password: may this login attempt go on? */
  async checkLogin(args, options) {
    return this.#check('/check-login', encode(ARGS.checkLogin, args), this.#failOpenLogin, options);
  }

  /** After verifying a password: how it went. */
  async reportLogin(args, options) {
    return this.#report('/report-login', encode(ARGS.reportLogin, args), options);
  }

  /** Before sending a one-time code. */
  async checkOtp(args, options) {
    return this.#check('/check-otp', encode(ARGS.checkOtp, args), this.#failOpenOtp, options);
  }

  /** Before checking a code the user typed (its own limits on guessing). */
  async checkOtpVerify(args, options) {
    return this.#check('/check-otp-verify', encode(ARGS.checkOtp, args), this.#failOpenOtp, options);
  }

  /** A code typed correctly (`verified: true`) or expired unused. */
  async reportOtp(args, options) {
    return this.#report('/report-otp', encode(ARGS.reportOtp, args), options);
  }

  /**
   * Whether a password is in the service's breach corpus, by k-anonymity:
   * only the first 5 hex digits of its SHA-1 leave the process. Never
   * rejects for an outage: "unknown" instead.
   * @param {string} password
   * @param {{timeoutMs?: number, signal?: AbortSignal}} [options]
   * @returns {Promise<'breached'|'clean'|'unknown'>}
   */
  async breached(password, options) {
    const { prefix, suffix } = rangeSplit(password);
    const { timeoutMs, signal } = callOptions(options, ['timeoutMs', 'signal']);
    if (timeoutMs !== undefined) {
      requireNumber('timeoutMs', timeoutMs, 1);
    }
    const got = await this.#exchange(
      {
        method: 'GET',
        path: `/range/${prefix}`,
        headers: { 'add-padding': 'true' },
        timeoutMs: timeoutMs ?? this.#timeoutMs,
        signal,
      },
      (outcome) => rangeResult(outcome, suffix),
    );
    return got === null ? 'unknown' : got.result;
  }

  /** Closes the pooled connections now instead of at their idle timeout. */
  close() {
    this.#transport.close();
  }

  async #check(path, body, failOpen, options) {
    const got = await this.#exchange(post(path, body, this.#timeoutMs, options), (outcome) =>
      checkVerdict(outcome, failOpen),
    );
    return got === null ? failedVerdict('breaker_open', failOpen).verdict : got.verdict;
  }

  async #report(path, body, options) {
    const got = await this.#exchange(post(path, body, this.#timeoutMs, options), reportResult);
    return got === null ? failedReport('breaker_open').report : got.report;
  }

  /**
   * One call through the breaker: null when it is open (no request
   * made), else what `interpret` made of the outcome; its `failed` feeds
   * the breaker, its `error` is thrown.
   */
  async #exchange(request, interpret) {
    const ticket = this.#breaker.admit();
    if (ticket === null) {
      return null;
    }
    let outcome;
    try {
      outcome = await this.#transport.send({ retries: this.#retries, ...request });
    } catch (abort) {
      this.#breaker.abandoned(ticket);
      throw abort;
    }
    const result = interpret(outcome);
    if (result.failed) {
      this.#breaker.failed(ticket);
    } else {
      this.#breaker.answered();
    }
    if (result.error) {
      throw result.error;
    }
    return result;
  }
}

function post(path, body, timeoutMs, options) {
  const { signal } = callOptions(options, ['signal']);
  return { method: 'POST', path, body, timeoutMs, signal };
}

/** A call's options object, refusing names it does not take. */
function callOptions(options, names) {
  for (const key of Object.keys(options ?? {})) {
    if (!names.includes(key)) {
      throw new UsageError(0, key, `unknown option ${key}`);
    }
  }
  return options ?? {};
}

/** The service's body cap (64 KiB, its AG_BODY_MAX): past it the service
 * answers 413 and closes the connection while the client still writes,
 * which would look like an outage and count for the breaker. */
const MAX_BODY_BYTES = 65536;

/** A UTF-16 surrogate that is not half of a pair: no UTF-8 encodes it.
 * With the u flag a well-formed pair is one code point, never \p{Cs}. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The JSON body of a call: each argument given under its wire name.
 * null and undefined are left out (the service reads null as absent, and
 * a client never sends it); an unknown name is refused, because a typo
 * such as `deviceTokn` would otherwise be dropped in silence. So is a
 * string that has no UTF-8 form (field: its argument's wire name) and a
 * body over the service's cap (status 413, field "body"): both refused
 * here, before the breaker, as the service would refuse them.
 */
function encode(names, args) {
  if (args === null || typeof args !== 'object') {
    throw new UsageError(0, 'args', 'the arguments must be an object');
  }
  const body = {};
  for (const [key, value] of Object.entries(args)) {
    if (!names.includes(key)) {
      throw new UsageError(0, key, `unknown argument ${key}`);
    }
    if (value !== null && value !== undefined) {
      body[key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = value;
    }
  }
  // JSON.stringify would write a lone surrogate as a \ud800 escape, which
  // the service refuses. The replacer sees every string it writes, keys
  // included; its calls for the top-level arguments (this === body) come
  // in order, each before the values nested in it, so `field` names the
  // argument a nested string belongs to.
  let field = null;
  const text = JSON.stringify(body, function refuseLoneSurrogates(key, value) {
    if (this === body) {
      field = key;
    }
    if (LONE_SURROGATE.test(key) || (typeof value === 'string' && LONE_SURROGATE.test(value))) {
      throw new UsageError(0, field, `${field} holds a lone surrogate, which has no UTF-8 form`);
    }
    return value;
  });
  const size = Buffer.byteLength(text, 'utf8');
  if (size > MAX_BODY_BYTES) {
    throw new UsageError(413, 'body', `the request body is ${size} bytes, over the service's ${MAX_BODY_BYTES}`);
  }
  return text;
}

function parseBaseUrl(text) {
  let url;
  try {
    url = new URL(String(text));
  } catch {
    throw new UsageError(0, 'baseUrl', 'baseUrl must be a URL such as http://127.0.0.1:8080');
  }
  if (url.protocol !== 'http:' || url.search !== '' || url.hash !== '' || url.username !== '') {
    throw new UsageError(0, 'baseUrl', 'baseUrl must be an http:// URL without query, fragment or credentials');
  }
  return url;
}

/** Milliseconds a timer can hold: setTimeout takes a longer one as 1. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function requireNumber(name, value, min) {
  if (typeof value !== 'number' || !(value >= min && value <= MAX_TIMER_MS)) {
    throw new UsageError(0, name, `${name} must be a number of milliseconds from ${min} to ${MAX_TIMER_MS}`);
  }
}

function requireInteger(name, value, min) {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new UsageError(0, name, `${name} must be a whole number, at least ${min}`);
  }
}
