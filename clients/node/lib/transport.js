// SPDX-License-Identifier: Apache-2.0
/**
 * HTTP to one abuseguard service: a keep-alive pool whose idle sockets
 * close before the service's own idle timeout, one deadline over the
 * whole call (queueing, connecting, writing, reading, retries and their
 * backoff), and the only retries clients/README.md allows: a request
 * that cannot have been counted.
 *
 * It knows nothing of verdicts: it hands back what the service said, or
 * that it said nothing in time ("timeout") or at all ("unavailable").
 */
import http from 'node:http';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const { version } = createRequire(import.meta.url)('../package.json');

/** Sockets to one service at most, as the AWS SDK's Node handler does
 * (50): a burst beyond that waits in the pool, inside its own deadline,
 * instead of running into the service's per-address connection cap. */
const MAX_SOCKETS = 50;

/** The most of an answer kept: every cap has a limit (a padded range
 * answer is about 40 KiB). */
const MAX_ANSWER_BYTES = 1 << 20;

/** The backoff's base: 20 ms times 2 to the try, full jitter. */
const BACKOFF_BASE_MS = 20;

/** What stopped a call at its deadline, told apart from the reason of
 * the caller's AbortSignal. */
const DEADLINE = Symbol('abuseguard deadline');

/** The bodies of the 503s the service sends before reading anything of
 * the request (the connection cap's, docs/http-api.md "Connections", and
 * a draining instance's on a kept-alive connection): the only 503s that
 * are safe to send again. */
const CAP_REFUSALS = new Set([
  'too many connections from this address',
  'too many connections; try again',
  'shutting down',
]);

/**
 * What one call came to.
 * @typedef {{kind: 'answer', status: number, headers: object, text: string}
 *   | {kind: 'timeout'}
 *   | {kind: 'unavailable', status: number, text: string|null}} Outcome
 */

export class Transport {
  #agent;
  #host;
  #port;
  #prefix;

  /**
   * @param {URL} baseUrl an http: URL; its path, if any, prefixes every route
   * @param {number} idleTimeoutMs a pooled socket idle this long is closed
   */
  constructor(baseUrl, idleTimeoutMs) {
    this.#host = baseUrl.hostname.replace(/^\[(.*)\]$/, '$1');
    this.#port = baseUrl.port === '' ? 80 : Number(baseUrl.port);
    this.#prefix = baseUrl.pathname.replace(/\/+$/, '');
    // `timeout` is set on every socket the agent makes and re-armed each
    // time one goes back to the free list (Agent#keepSocketAlive); on a
    // free socket its expiry destroys the socket. LIFO reuse keeps the
    // busiest sockets warm and lets the rest reach that timeout.
    this.#agent = new http.Agent({
      keepAlive: true,
      timeout: idleTimeoutMs,
      scheduling: 'lifo',
      maxSockets: MAX_SOCKETS,
    });
  }

  /**
   * Makes one call, retrying only what was never read.
   * @param {object} req
   * @param {'GET'|'POST'} req.method
   * @param {string} req.path the route, e.g. "/check-login"
   * @param {string} [req.body] JSON text to send
   * @param {object} [req.headers] extra request headers
   * @param {number} req.timeoutMs the deadline of the whole call
   * @param {number} req.retries at most this many retries
   * @param {AbortSignal} [req.signal] the caller's: its abort rejects
   * @returns {Promise<Outcome>} rejects only with the caller's abort reason
   */
  async send({ method, path, body, headers, timeoutMs, retries, signal }) {
    if (signal?.aborted) {
      throw abortReason(signal);
    }
    const deadline = performance.now() + timeoutMs;
    // The call's state, stopped by the deadline or the caller: the request
    // in flight is destroyed, a backoff pause cut short. A plain object
    // and one timer, not an AbortController per call: the signal option
    // of http.request costs more CPU than the rest of the client.
    const call = { stopped: null, req: null, settle: null, wake: null };
    const stop = (reason) => {
      if (call.stopped === null) {
        call.stopped = reason;
        call.req?.destroy();
        // The attempt ends here too: a request whose socket Node already
        // gave up on (an unhandled upgrade, say) emits nothing more when
        // destroyed, and the deadline must hold whatever the request does.
        call.settle?.({ error: new Error('stopped'), written: true });
        call.wake?.();
      }
    };
    const timer = setTimeout(stop, timeoutMs, DEADLINE);
    const onCallerAbort = () => stop(abortReason(signal));
    signal?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      for (let attempt = 0; ; attempt++) {
        const got = await this.#attempt(method, path, body, headers, call);
        call.req = null;
        call.settle = null;
        if (got.status !== undefined && !isCapRefusal(got)) {
          return { kind: 'answer', ...got };
        }
        if (call.stopped !== null) {
          break;
        }
        const fresh = got.status !== undefined || !got.written;
        const wait = Math.random() * BACKOFF_BASE_MS * 2 ** attempt;
        if (!fresh || attempt >= retries || performance.now() + wait >= deadline) {
          return got.status !== undefined
            ? { kind: 'unavailable', status: got.status, text: got.text }
            : { kind: 'unavailable', status: 0, text: null };
        }
        await new Promise((resolve) => {
          const pause = setTimeout(resolve, wait);
          call.wake = () => {
            clearTimeout(pause);
            resolve();
          };
        });
        call.wake = null;
        if (call.stopped !== null) {
          break;
        }
      }
      if (call.stopped === DEADLINE) {
        return { kind: 'timeout' };
      }
      throw call.stopped;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  /** Closes every pooled socket; calls after this open new ones. */
  close() {
    this.#agent.destroy();
  }

  /**
   * One request on the pool. Resolves (never rejects) with the answer,
   * or with the error and whether any byte of the request can have left:
   * a socket that never connected wrote nothing, a reused or connected
   * one may have.
   */
  #attempt(method, path, body, extra, call) {
    return new Promise((resolve) => {
      let connected = false;
      const headers = { 'user-agent': `abuseguard-node/${version}`, ...extra };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(body);
      }
      const req = http.request(
        {
          agent: this.#agent,
          host: this.#host,
          port: this.#port,
          path: this.#prefix + path,
          method,
          headers,
        },
        (res) => {
          if (res.statusCode < 200) {
            // A 101 without an Upgrade header: nothing after it on this
            // connection is HTTP, so it must not go back to the pool.
            res.socket.destroy();
            resolve({ status: res.statusCode, headers: res.headers, text: '' });
            return;
          }
          readAnswer(res, resolve);
        },
      );
      call.req = req;
      call.settle = resolve;
      req.on('socket', (socket) => {
        if (socket.connecting) {
          socket.once('connect', () => (connected = true));
        } else {
          connected = true;
        }
      });
      // A 101 ends HTTP on the connection: Node hands it over as an
      // upgrade (and would destroy the socket as an error without this
      // listener). It is an answer, though not abuseguard's, and
      // verdicts.js makes it the usage error it is; the socket goes.
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode, headers: res.headers, text: '' });
      });
      req.on('error', (error) => resolve({ error, written: connected }));
      req.end(body);
    });
  }
}

/** Collects an answer up to the cap; a cut or oversized one is an error. */
function readAnswer(res, resolve) {
  const chunks = [];
  let size = 0;
  res.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      res.destroy(new Error('answer over the size cap'));
      return;
    }
    chunks.push(chunk);
  });
  res.on('end', () =>
    resolve({
      status: res.statusCode,
      headers: res.headers,
      text: Buffer.concat(chunks).toString('utf8'),
    }),
  );
  // A connection lost mid-answer (or our own abort) may have been
  // counted by the service: written, so never retried.
  res.on('error', (error) => resolve({ error, written: true }));
  res.on('close', () => {
    if (!res.complete) {
      resolve({ error: new Error('answer cut short'), written: true });
    }
  });
}

function isCapRefusal(got) {
  if (got.status !== 503) {
    return false;
  }
  try {
    return CAP_REFUSALS.has(JSON.parse(got.text).error);
  } catch {
    return false;
  }
}

function abortReason(signal) {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
