// The BullMQ side of toc bench --scenarios bullmq: the peer issue 35
// compares toc's CPU a job with, run on the same machine in the same
// minute so that the machine's drift cancels out of the ratio.
//
//   node bench.mjs add HOST PORT CONCURRENCY DURATION_MS
//     CONCURRENCY async callers, each adding one delayed job at a time
//     (due 30 minutes on, as toc bench's schedule scenario) for
//     DURATION_MS: BullMQ's single add.
//   node bench.mjs drain HOST PORT CONCURRENCY JOBS
//     JOBS delayed jobs, all due by the time a Worker of CONCURRENCY
//     starts, handled by an in-process handler that does nothing: the
//     drain of a timeout backlog.
//
// Each phase prepares, prints {"ready": PHASE} and waits for a line on
// stdin before it starts, so that the bench reads every process's CPU
// around the measured part only; it then prints {"done": PHASE, ...} with
// its count, errors, seconds and latencies in ms, and exits.
import { createInterface } from 'node:readline';
import { Queue, Worker } from 'bullmq';

const [phase, host, port, concurrency, amount] = process.argv.slice(2);
const connection = { host, port: Number(port), maxRetriesPerRequest: null };
const conc = Number(concurrency);
const name = `toc-peer-${phase}-${process.pid}`;
const delayed = 30 * 60 * 1000;

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function ready() {
  console.log(JSON.stringify({ ready: phase }));
  await lines.next();
}

function summary(lat) {
  lat.sort((a, b) => a - b);
  const at = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : 0);
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: lat.at(-1) ?? 0, n: lat.length };
}

async function add() {
  const queue = new Queue(name, { connection });
  await queue.waitUntilReady();
  for (let i = 0; i < 100; i++) {
    await queue.add('job', { bench: true }, { delay: delayed }); // warm up: scripts loaded, code compiled
  }
  await ready();
  const lat = [];
  let count = 0;
  let errors = 0;
  const start = performance.now();
  const end = start + Number(amount);
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          await queue.add('job', { bench: true }, { delay: delayed });
        } catch {
          errors++;
        }
        count++;
        lat.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  console.log(JSON.stringify({ done: phase, count, errors, seconds, latency_ms: summary(lat) }));
  await queue.close();
}

async function drain() {
  const jobs = Number(amount);
  const queue = new Queue(name, { connection });
  await queue.waitUntilReady();
  for (let i = 0; i < jobs; i += 1000) {
    const chunk = Array.from({ length: Math.min(1000, jobs - i) }, () => ({
      name: 'job',
      data: { bench: true },
      opts: { delay: 1 },
    }));
    await queue.addBulk(chunk);
  }
  await new Promise((r) => setTimeout(r, 10)); // the last job, 1 ms after its add, is due
  await ready();
  const lat = [];
  let errors = 0;
  const worker = new Worker(name, async () => {}, { connection, concurrency: conc, autorun: false });
  const start = performance.now();
  const finished = new Promise((resolve) => {
    const seen = () => {
      if (lat.length + errors === jobs) resolve();
    };
    worker.on('completed', () => {
      lat.push(performance.now() - start);
      seen();
    });
    worker.on('failed', () => {
      errors++;
      seen();
    });
  });
  worker.run();
  await finished;
  const seconds = (performance.now() - start) / 1000;
  console.log(JSON.stringify({ done: phase, count: jobs, errors, seconds, latency_ms: summary(lat) }));
  await worker.close();
  await queue.close();
}

try {
  await (phase === 'add' ? add() : drain());
  process.exit(0);
} catch (err) {
  console.error(`bullmq ${phase}: ${err?.stack ?? err}`);
  process.exit(1);
}
