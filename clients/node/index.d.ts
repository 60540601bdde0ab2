// SPDX-License-Identifier: Apache-2.0
/**
 * abuseguard's Node.js client. The shape is clients/README.md's, in
 * camelCase; the wire names are snake_case.
 */

/** Options of a {@link Client}; all but `baseUrl` optional. */
export interface ClientOptions {
  /** The service, e.g. "http://127.0.0.1:8080"; a path prefixes every route. */
  baseUrl: string | URL;
  /** The deadline of one call, retries included, in ms. Default 500. */
  timeoutMs?: number;
  /** A login check that got no answer is allowed. Default true. */
  failOpenLogin?: boolean;
  /** An OTP check (send or verify) that got no answer is allowed. Default false. */
  failOpenOtp?: boolean;
  /** Calls in a row without an answer that open the breaker. Default 5. */
  breakerFailures?: number;
  /** How long the breaker stays open, in clock ms; then one call tries. Default 10 000. */
  breakerOpenMs?: number;
  /** Retries at most, only of a request the service never read. Default 2. */
  retries?: number;
  /** A pooled connection idle this long is closed, in ms. Default 5 000. */
  idleTimeoutMs?: number;
  /** The breaker's only time source, in ms. Default the monotonic clock (performance.now). */
  clock?: () => number;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborting it rejects the call with its reason; the breaker is not told. */
  signal?: AbortSignal;
}

/** Options of {@link Client.breached}. */
export interface BreachedOptions extends CallOptions {
  /** This lookup's deadline in ms instead of the client's `timeoutMs`. */
  timeoutMs?: number;
}

/** Arguments of {@link Client.checkLogin}. null is the same as leaving a field out. */
export interface CheckLoginArgs {
  /** The account name as typed. */
  user: string;
  /** The client's address: {@link clientIp}. */
  ip: string;
  /** Your device identifier, for policies keyed on device. */
  device?: string | null;
  /** The token a successful report answered, read from the cookie. */
  deviceToken?: string | null;
  /** {@link passwordFingerprint} of the password being tried. */
  passwordFp?: string | null;
  /** True when {@link Client.breached} said "breached"; otherwise leave it out. */
  passwordBreached?: boolean | null;
  /** The challengeNonce of the verdict that asked, once the person passed your challenge. */
  challengePassed?: string | boolean | null;
  /** Your reference (1 to 64 printable ASCII bytes), echoed in the events the call raises. */
  ref?: string | null;
}

/** Arguments of {@link Client.reportLogin}. */
export interface ReportLoginArgs {
  user: string;
  ip: string;
  /** The password (or recovery) went through. */
  success: boolean;
  /** Failures only; default "bad_password". */
  reason?: 'bad_password' | 'unknown_user' | 'second_factor_failed' | null;
  /** "recovery" for a success of your own account recovery; default "password". */
  method?: 'password' | 'recovery' | null;
  passwordFp?: string | null;
  passwordBreached?: boolean | null;
  deviceToken?: string | null;
  /** On a success: the challengeNonce its check passed; it proves the login,
   * which then teaches the user's usual places a new country. */
  challengePassed?: string | null;
  ref?: string | null;
}

/** Arguments of {@link Client.checkOtp} and {@link Client.checkOtpVerify}. */
export interface CheckOtpArgs {
  /** An E.164 number. */
  phone: string;
  ip: string;
  /** The account, if known (a device token is trusted only with it). */
  user?: string | null;
  deviceToken?: string | null;
  challengePassed?: string | boolean | null;
  ref?: string | null;
}

/** Arguments of {@link Client.reportOtp}. */
export interface ReportOtpArgs {
  phone: string;
  ip: string;
  /** true: the code was typed correctly; false: it expired unused. */
  verified: boolean;
  user?: string | null;
  deviceToken?: string | null;
  ref?: string | null;
}

/** Why the client decided alone: no answer in time, none usable, or the breaker open. */
export type Failure = 'timeout' | 'unavailable' | 'breaker_open';

/** The answer to a check. */
export interface Verdict {
  outcome: 'allow' | 'challenge' | 'deny';
  /** outcome is "allow". */
  allowed: boolean;
  /** Whole seconds to wait; 0 when allowed or unknown. */
  retryAfter: number;
  /** The policy that denied or challenged, else null. */
  policy: string | null;
  /** Bring it back as `challengePassed` once the person passed the challenge. */
  challengeNonce: string | null;
  /** The lane the check was judged in; null without an answer. */
  device: 'trusted' | 'untrusted' | null;
  /** abuseguard answered without Redis. */
  degraded: boolean;
  /** null when abuseguard answered; else why the fail mode decided. */
  failed: Failure | null;
  /** The HTTP status, 0 without one. */
  status: number;
  /** The answer's body as parsed (unknown fields kept), null without a JSON one. */
  body: Record<string, unknown> | null;
}

/** The result of a report; never rejects for an outage. */
export interface Report {
  /** abuseguard answered 200 or 204. */
  recorded: boolean;
  /** A login success's device token: keep it with {@link deviceCookie}. */
  deviceToken: string | null;
  /** The token's lifetime in seconds, 0 without one. */
  expiresIn: number;
  failed: Failure | null;
  status: number;
}

/** abuseguard's client: one keep-alive pool, one breaker. Make one and share it. */
export class Client {
  /** @throws {UsageError} status 0 for an unknown option or a bad value. */
  constructor(options: ClientOptions);
  /** Before verifying a password. Rejects only with a UsageError or the signal's reason. */
  checkLogin(args: CheckLoginArgs, options?: CallOptions): Promise<Verdict>;
  /** After verifying a password. */
  reportLogin(args: ReportLoginArgs, options?: CallOptions): Promise<Report>;
  /** Before sending a one-time code (fails closed by default). */
  checkOtp(args: CheckOtpArgs, options?: CallOptions): Promise<Verdict>;
  /** Before checking a code the user typed (fails closed by default). */
  checkOtpVerify(args: CheckOtpArgs, options?: CallOptions): Promise<Verdict>;
  /** A code typed correctly or expired unused. */
  reportOtp(args: ReportOtpArgs, options?: CallOptions): Promise<Report>;
  /**
   * The password in the breach corpus? Only 5 hex digits of its SHA-1 are
   * sent. "unknown" for no corpus (404), a timeout, any failure or the
   * breaker open.
   */
  breached(password: string, options?: BreachedOptions): Promise<'breached' | 'clean' | 'unknown'>;
  /** Closes the pooled connections now. */
  close(): void;
}

/**
 * A request abuseguard refused as malformed (status 4xx), an answer that
 * is not abuseguard's (a 1xx, 3xx or unexpected 2xx: the base URL leads
 * elsewhere; field null), or an input refused before sending: status 0
 * for an argument or option (a string with a lone surrogate too, field
 * its wire name), 413 with field "body" for a body over 64 KiB.
 */
export class UsageError extends Error {
  constructor(status: number, field: string | null, message: string);
  readonly name: 'UsageError';
  /** The HTTP status; 0 when refused locally (413 for the body's size). */
  status: number;
  /** The field at fault, as the service named it; null when not named. */
  field: string | null;
}

/**
 * Lower-case hex HMAC-SHA-256 keyed by `key` over the password's UTF-8
 * bytes exactly as typed.
 * @throws {UsageError} field "key" for a key under 32 bytes.
 */
export function passwordFingerprint(key: Uint8Array, password: string): string;

/**
 * The address to send as `ip`: the peer, or behind trusted proxies the
 * first untrusted address of `header`, walked from the right. Entries
 * are read as the Go client reads them (ports and brackets stripped,
 * "[1.2.3.4]" too; space around an entry, quoted or not, ignored).
 * @param header "x-forwarded-for" (default, also for "") or "forwarded" (RFC 7239)
 * @param trustedProxies blank entries are skipped
 * @throws {UsageError} field "trustedProxies" for an entry that is no CIDR or address.
 */
export function clientIp(
  remoteAddr: string,
  headers: Record<string, string | string[] | undefined> | { get(name: string): string | null },
  trustedProxies: readonly string[],
  header?: string,
): string;

/** "ag_device_" and 16 hex digits of SHA-256 of "abuseguard-device:" + userId. */
export function deviceCookieName(userId: string): string;

/**
 * The Set-Cookie value keeping a device token (HttpOnly, SameSite=Lax,
 * Path=/, Secure unless `secure` is false).
 * @throws {UsageError} for a token that is not a cookie value or a bad maxAge.
 */
export function deviceCookie(
  userId: string,
  token: string,
  maxAge: number,
  secure?: boolean,
): { name: string; header: string };

/** The account's device token in a Cookie header, or null. */
export function deviceTokenFromCookies(cookieHeader: string | null | undefined, userId: string): string | null;

/**
 * Whether an X-Abuseguard-Signature header signs `body` with `secret`
 * within `tolerance` seconds (default 300) of `now` (Unix seconds,
 * default the system clock). Anything malformed is false.
 */
export function verifyWebhook(
  secret: Uint8Array | string,
  body: Uint8Array | string,
  header: string | null | undefined,
  options?: { now?: number; tolerance?: number },
): boolean;
