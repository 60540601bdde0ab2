// SPDX-License-Identifier: Apache-2.0
// The Node.js client's overhead: N calls of POST /check-login through
// node:http alone (one kept-alive connection, the answer read and parsed)
// against N calls of Client#checkLogin with the same bodies, in R rounds
// that alternate which goes first. One JSON line out; no assertions.
//
//   node bench/clients/bench_node.mjs http://127.0.0.1:8080 [R=7] [N=2000]
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { Client } from '../../clients/node/index.js';

const [baseUrl, rounds = '7', calls = '2000'] = process.argv.slice(2);
if (!baseUrl) {
  process.stderr.write('usage: bench_node.mjs BASE_URL [ROUNDS] [CALLS]\n');
  process.exit(2);
}
const R = Number(rounds);
const N = Number(calls);
const url = new URL('/check-login', baseUrl);
const rawAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const client = new Client({ baseUrl });

// Users and addresses of this language's own (10.2.<round>.x), each
// address at most 16 calls a round: no policy trips.
const body = (round, i) => ({ user: `bench-node-${round}-${i}@example.com`, ip: `10.2.${round}.${(i % 250) + 1}` });

function raw(args) {
  const text = JSON.stringify(args);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: rawAgent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** N calls one after another: the median wall time and the CPU time per call, in µs. */
async function phase(round, call) {
  const wall = new Array(N);
  const cpu = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const started = performance.now();
    await call(body(round, i));
    wall[i] = (performance.now() - started) * 1000;
  }
  const used = process.cpuUsage(cpu);
  wall.sort((a, b) => a - b);
  const median = N % 2 ? wall[(N - 1) / 2] : (wall[N / 2 - 1] + wall[N / 2]) / 2;
  return { wall: round1(median), cpu: round1((used.user + used.system) / N) };
}

const round1 = (x) => Math.round(x * 10) / 10;

const out = { lang: 'node', raw_us: [], client_us: [], raw_cpu_us: [], client_cpu_us: [] };
for (let round = 0; round < R; round++) {
  const runRaw = () => phase(round, raw);
  const runClient = () => phase(round, (args) => client.checkLogin(args));
  let r;
  let c;
  if (round % 2 === 0) {
    r = await runRaw();
    c = await runClient();
  } else {
    c = await runClient();
    r = await runRaw();
  }
  out.raw_us.push(r.wall);
  out.client_us.push(c.wall);
  out.raw_cpu_us.push(r.cpu);
  out.client_cpu_us.push(c.cpu);
}
client.close();
rawAgent.destroy();
process.stdout.write(`${JSON.stringify(out)}\n`);
