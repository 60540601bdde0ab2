// SPDX-License-Identifier: Apache-2.0
// A fake abuseguard for the client's tests: a real HTTP server on
// 127.0.0.1 whose answers each test scripts, recording every request
// and connection. Imported by the tests; it holds no test of its own.
import http from 'node:http';
import net from 'node:net';
import diagnostics from 'node:diagnostics_channel';

/** A handler's answer that never comes: the request hangs. */
export const HANG = Symbol('hang');

/** A handler's answer that resets the connection after the request. */
export const RESET = Symbol('reset');

/**
 * Starts a fake service. `handler(req, body)` returns {status, body,
 * headers} (body: an object sent as JSON, or a string sent as is), or
 * {raw} (bytes written as they are, then the connection ends: answers
 * Node's server will not write, such as a 101), or HANG, or RESET; it
 * may be changed later through `fake.handler`.
 */
export async function startFake(handler) {
  const fake = {
    handler,
    /** Every request: {method, url, headers, text, json}. */
    requests: [],
    /** Every accepted socket, in order. */
    sockets: [],
    /** How many connections to refuse first as the connection cap does. */
    capRefusals: 0,
  };
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) {
      chunks.push(chunk);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // A GET has no body; the tests read `text` then.
    }
    fake.requests.push({ method: req.method, url: req.url, headers: req.headers, text, json });
    const answer = await fake.handler(req, json);
    if (answer === HANG) {
      return;
    }
    if (answer === RESET) {
      req.socket.resetAndDestroy?.() ?? req.socket.destroy();
      return;
    }
    if (answer.raw !== undefined) {
      req.socket.end(answer.raw);
      return;
    }
    const body = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(body);
  });
  // Longer than any client idle timeout under test: the client must be
  // the one that closes an idle connection.
  server.keepAliveTimeout = 60_000;
  // The connection cap refuses before reading anything, as abuseguard's
  // accept loop does: a canned 503 and the end, then it drains the socket.
  const front = net.createServer((socket) => {
    fake.sockets.push(socket);
    if (fake.capRefusals > 0) {
      fake.capRefusals -= 1;
      socket.on('error', () => {});
      socket.end(CAP_503);
      socket.resume();
      return;
    }
    server.emit('connection', socket);
  });
  await new Promise((resolve) => front.listen(0, '127.0.0.1', resolve));
  fake.port = front.address().port;
  fake.url = `http://127.0.0.1:${fake.port}`;
  fake.close = () =>
    new Promise((resolve) => {
      for (const socket of fake.sockets) {
        socket.destroy();
      }
      front.close(() => resolve());
    });
  return fake;
}

const CAP_BODY = JSON.stringify({ error: 'too many connections from this address' });
const CAP_503 =
  'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n' +
  `Retry-After: 1\r\nConnection: close\r\nContent-Length: ${CAP_BODY.length}\r\n\r\n${CAP_BODY}`;

/**
 * A port that refuses connections until `release()`: the local port of a
 * connection this process holds open. Nothing listens on it, and while
 * it is held nothing else can bind it, as a port bound and released
 * (freePort) may be taken by another process before the test uses it.
 */
export async function refusingPort() {
  const server = net.createServer((socket) => socket.on('error', () => {}));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const holder = net.connect(server.address().port, '127.0.0.1');
  await new Promise((resolve, reject) => holder.once('connect', resolve).once('error', reject));
  return {
    port: holder.localPort,
    release: () => {
      holder.destroy();
      server.close();
    },
  };
}

/** A port nothing listens on (bound, then released): only for a test
 * that must then listen on it itself; it may be taken meanwhile. */
export async function freePort() {
  const probe = net.createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * Counts the client sockets this process opens while `fn` runs, and
 * calls `onFirstError` when the first of them fails (a refused connect).
 */
export async function countingSockets(fn, onFirstError = () => {}) {
  let count = 0;
  const seen = ({ socket }) => {
    count += 1;
    if (count === 1) {
      socket.once('error', onFirstError);
    }
  };
  const channel = diagnostics.channel('net.client.socket');
  channel.subscribe(seen);
  try {
    const result = await fn();
    return { result, count };
  } finally {
    channel.unsubscribe(seen);
  }
}
