// SPDX-License-Identifier: Apache-2.0
// The Node.js example service on its own, against a fake abuseguard
// that allows everything: what the example itself decides (the end-to-end
// story against a real abuseguard is tests/integration/test_examples.py).
//
//   node --test examples/node/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

let abuseguard;
let example;
let port;

before(async () => {
  abuseguard = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url.startsWith('/report-')) {
        res.writeHead(204).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ allowed: true, device: 'untrusted', decisions: [] }));
    });
  });
  abuseguard.listen(0, '127.0.0.1');
  await once(abuseguard, 'listening');
  example = spawn(process.execPath, [fileURLToPath(new URL('login_service.mjs', import.meta.url))], {
    env: {
      ...process.env,
      ABUSEGUARD_URL: `http://127.0.0.1:${abuseguard.address().port}`,
      PORT: '0',
      FP_KEY_HEX: '42'.repeat(32),
      TRUSTED_PROXIES: '',
      COOKIE_SECURE: '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  example.stdout.setEncoding('utf8');
  for await (const chunk of example.stdout) {
    out += chunk;
    const m = /listening on 127\.0\.0\.1:([0-9]+)/.exec(out);
    if (m) {
      port = Number(m[1]);
      break;
    }
  }
  assert.ok(port, `the example did not start: ${out}`);
});

after(async () => {
  if (example.exitCode === null) {
    const exited = once(example, 'exit');
    example.kill();
    await exited;
  }
  abuseguard.close();
});

async function post(path, body) {
  const res = await new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST' }, resolve);
    req.on('error', reject);
    req.setHeader('content-type', 'application/json');
    req.end(JSON.stringify(body));
  });
  let text = '';
  res.setEncoding('utf8');
  for await (const chunk of res) {
    text += chunk;
  }
  return { status: res.statusCode, body: JSON.parse(text) };
}

test('a code as long as the right one but not in bytes is a wrong code, not a 500', async () => {
  const phone = { phone: '+14155550100' };
  const sent = await post('/otp/send', phone);
  assert.equal(sent.status, 200);
  const { code } = sent.body;
  // Six characters, seven UTF-8 bytes: the same length in JavaScript.
  const accented = `${code.slice(0, 5)}\u00e9`;
  assert.equal(accented.length, code.length);
  assert.deepEqual(await post('/otp/verify', { ...phone, code: accented }), {
    status: 401,
    body: { error: 'wrong code' },
  });
  assert.deepEqual(await post('/otp/verify', { ...phone, code: 42 }), {
    status: 401,
    body: { error: 'wrong code' },
  });
  // The right code still passes.
  assert.deepEqual(await post('/otp/verify', { ...phone, code }), { status: 200, body: { ok: true } });
});
