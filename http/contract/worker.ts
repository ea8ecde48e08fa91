// A worker of a pull topic written against the types that
// openapi-typescript generates from ../openapi.json (toc-api.d.ts), with
// nothing but fetch. work() long-polls toc for as many jobs as it has
// idle handlers, extends each lease at half of the time it has left while
// its handler runs, acks the job when the handler resolves and nacks it
// when it throws (RetryAfter asks for the retry's delay). Once its signal
// is aborted it stops leasing at once and lets the running handlers
// finish for graceMs; then their signals are aborted and their leases
// left to expire, so the jobs come back: delivery is at least once.
//
//	TOC_URL=http://127.0.0.1:8080 TOC_TOKEN=... TOC_TOPIC=orders npx tsx worker.ts
//
// Run so, it prints each job and acks it, until SIGINT or SIGTERM, or
// after TOC_MAX_JOBS jobs.

import { pathToFileURL } from "node:url";
import type { components, operations } from "./toc-api.js";

export type LeasedJob = components["schemas"]["WebhookPayload"];
type Lease = components["schemas"]["Lease"];
type LeaseRequest = components["schemas"]["LeaseRequest"];
type NackRequest = components["schemas"]["NackRequest"];
type ExtendRequest = components["schemas"]["ExtendRequest"];

// Answer<O> is what operation O may answer: its documented statuses, each
// with its JSON body, so that a switch on status narrows the body.
type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : undefined;
type Answer<O> = O extends { responses: infer R }
  ? { [S in keyof R]: { status: S; body: JSONOf<R[S]> } }[keyof R]
  : never;

// A handler is given the job and a signal aborted when its lease is lost
// or the grace period is over.
export type Handler = (job: LeasedJob, signal: AbortSignal) => Promise<void>;

export interface WorkOptions {
  // Handlers at once (default 1).
  concurrency?: number;
  // How long each job is leased, and extended by, in ms (default 30000).
  leaseMs?: number;
  // How long each lease request waits for a job, in ms (default 20000).
  waitMs?: number;
  // How long running handlers may finish once signal is aborted, in ms
  // (default 30000).
  graceMs?: number;
  // When set, work returns after this many jobs, leasing no more.
  maxJobs?: number;
  // Stops the worker.
  signal?: AbortSignal;
  // Where what goes wrong on the way is told (default console.error).
  log?: (message: string) => void;
}

// RetryAfter, thrown by a handler, nacks its job to be retried after
// delayMs rather than after the topic's backoff.
export class RetryAfter extends Error {
  constructor(
    readonly delayMs: number,
    message: string,
  ) {
    super(message);
  }
}

// Refused is an answer of toc that stops the worker: a 4xx to a lease
// request (a topic that does not deliver by pull, say).
export class Refused extends Error {}

// sleep waits ms, or until signal is aborted.
// sleep waits ms, or until signal is aborted; with ms Infinity only the
// latter (setTimeout would take it for 1 ms).
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

export async function work(baseUrl: string, token: string, topic: string, handler: Handler, opts: WorkOptions = {}): Promise<void> {
  const base = baseUrl.replace(/\/+$/, "");
  const concurrency = opts.concurrency ?? 1;
  const leaseMs = opts.leaseMs ?? 30_000;
  const stop = opts.signal ?? new AbortController().signal;
  const log = opts.log ?? ((m: string) => console.error(m));
  // hard ends the handlers, extensions, acks and nacks: graceMs after stop.
  const hard = new AbortController();
  let left = opts.maxJobs ?? Infinity;
  let wake = (): void => {};
  const running = new Set<Promise<void>>();

  // call sends one request and returns its status and JSON body, typed
  // as operation O answers; it rejects when there is no answer.
  async function call<O>(path: string, body: unknown, signal: AbortSignal): Promise<Answer<O>> {
    const headers: Record<string, string> = { Accept: "application/json", "Content-Type": "application/json" };
    if (token !== "") {
      headers["Authorization"] = `Bearer ${token}`;
    }
    const resp = await fetch(base + path, { method: "POST", headers, body: JSON.stringify(body ?? {}), signal });
    const text = await resp.text();
    return { status: resp.status, body: text === "" ? undefined : JSON.parse(text) } as Answer<O>;
  }

  // localEnd is when a lease of at most leaseMs, started by toc no later
  // than at and ending at expiresAt by toc's clock, ends by ours
  // (performance.now()): expiresAt read on our clock, but never after at
  // plus leaseMs, in case the clocks differ. For an extension at is when
  // it was sent, which errs early by its round trip.
  function localEnd(at: number, expiresAt: string): number {
    return at + Math.min(leaseMs, Date.parse(expiresAt) - Date.now());
  }

  // keep extends a lease at half of the time it has left until it is
  // stopped, and aborts lost when the lease ended or expired.
  function keep(lease: Lease, end: number, lost: AbortController): () => void {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const path = `/v1/leases/${encodeURIComponent(lease.token)}/extend`;
    const schedule = (capped: boolean): void => {
      const rest = end - performance.now();
      if (rest <= 0) {
        log(`job ${lease.job.id}: lease expired while its handler ran; it may run again elsewhere`);
        lost.abort(new Error("lease lost"));
        return;
      }
      timer = setTimeout(() => void (capped ? schedule(true) : extend()), capped ? rest : Math.max(rest / 2, 100));
    };
    const extend = async (): Promise<void> => {
      const sent = performance.now();
      const body: ExtendRequest = { lease_ms: leaseMs };
      let capped = false;
      try {
        const a = await call<operations["extendLease"]>(path, body, hard.signal);
        if (stopped) {
          return;
        }
        if (a.status === 409 || a.status === 404) {
          log(`job ${lease.job.id}: lease ended while its handler ran; it may run again elsewhere`);
          lost.abort(new Error("lease lost"));
          return;
        }
        if (a.status === 200 && a.body.expires_at !== undefined) {
          // toc bounds a lease by the topic's callback timeout: once an
          // extension gains little, it is the last.
          const e = localEnd(sent, a.body.expires_at);
          capped = e - end < leaseMs / 10;
          end = Math.max(end, e);
        } else {
          log(`job ${lease.job.id}: extend: HTTP ${String(a.status)}; retrying`);
        }
      } catch (err) {
        if (stopped) {
          return;
        }
        log(`job ${lease.job.id}: extend: ${String(err)}; retrying`);
      }
      schedule(capped);
    };
    schedule(false);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  // settle acks or nacks the job of lease.
  async function settle(lease: Lease, err: unknown): Promise<void> {
    const what = err === undefined ? "ack" : "nack";
    const path = `/v1/leases/${encodeURIComponent(lease.token)}/${what}`;
    try {
      let a: Answer<operations["ackLease"]> | Answer<operations["nackLease"]>;
      if (err === undefined) {
        a = await call<operations["ackLease"]>(path, undefined, hard.signal);
      } else {
        const nack: NackRequest = { error: (err instanceof Error ? err.message : String(err)).slice(0, 1000) };
        if (err instanceof RetryAfter) {
          nack.delay_ms = Math.min(Math.max(Math.ceil(err.delayMs), 0), 86_400_000);
        }
        a = await call<operations["nackLease"]>(path, nack, hard.signal);
      }
      if (a.status !== 200) {
        log(`job ${lease.job.id}: ${what}: HTTP ${String(a.status)} ${JSON.stringify(a.body)}; the job comes back when its lease expires`);
      }
    } catch (e) {
      log(`job ${lease.job.id}: ${what}: ${String(e)}; the job comes back when its lease expires`);
    }
  }

  // handle runs the handler on lease while keeping the lease, and settles
  // the job.
  async function handle(lease: Lease, end: number): Promise<void> {
    const job = new AbortController();
    const onHard = (): void => job.abort(hard.signal.reason);
    hard.signal.addEventListener("abort", onHard, { once: true });
    const release = keep(lease, end, job);
    let err: unknown;
    try {
      await handler(lease.job, job.signal);
    } catch (e) {
      err = e ?? new Error("handler failed");
    } finally {
      release();
      hard.signal.removeEventListener("abort", onHard);
    }
    if (!hard.signal.aborted) {
      await settle(lease, err);
    }
  }

  let failures = 0;
  let refused: Refused | undefined;
  stop.addEventListener("abort", () => wake(), { once: true });
  while (!stop.aborted && left > 0) {
    if (running.size >= concurrency) {
      await new Promise<void>((resolve) => (wake = resolve));
      continue;
    }
    const req: LeaseRequest = { max: Math.min(concurrency - running.size, left, 1000), wait_ms: opts.waitMs ?? 20_000, lease_ms: leaseMs };
    let a: Answer<operations["leaseJobs"]>;
    try {
      a = await call<operations["leaseJobs"]>(`/v1/topics/${encodeURIComponent(topic)}/leases`, req, stop);
    } catch (err) {
      if (stop.aborted) {
        break;
      }
      a = { status: 503, body: { error: { code: "unavailable", message: String(err) } } };
    }
    if (a.status !== 200) {
      const status: number = a.status; // a gateway may answer 429
      if (status < 500 && status !== 429) {
        refused = new Refused(`lease ${topic}: HTTP ${String(a.status)} ${JSON.stringify(a.body)}`);
        break;
      }
      failures++;
      const wait = Math.min(100 * 2 ** (failures - 1), 5_000) * (0.5 + Math.random() / 2);
      log(`lease ${topic}: HTTP ${String(a.status)} ${JSON.stringify(a.body)}; retrying in ${Math.round(wait)} ms`);
      await sleep(wait, stop);
      continue;
    }
    failures = 0;
    // toc leased the jobs as it answered, not when the call was sent: a
    // long-poll may have waited longer than a lease lasts.
    const got = performance.now();
    for (const lease of a.body.leases.slice(0, req.max)) {
      left--;
      const p = handle(lease, localEnd(got, lease.expires_at)).finally(() => {
        running.delete(p);
        wake();
      });
      running.add(p);
    }
  }

  // Stopping: the running handlers finish, for graceMs once stopped.
  if (!stop.aborted) {
    await Promise.race([Promise.allSettled([...running]), sleep(Infinity, stop)]);
  }
  if (running.size > 0) {
    const graceOver = new AbortController();
    await Promise.race([Promise.allSettled([...running]), sleep(opts.graceMs ?? 30_000, graceOver.signal)]);
    graceOver.abort();
    if (running.size > 0) {
      log(`grace period over: aborting ${running.size} handler(s); their jobs come back when their leases expire`);
      hard.abort(new Error("grace period over"));
      await Promise.allSettled([...running]);
    }
  }
  hard.abort();
  if (refused !== undefined) {
    throw refused;
  }
}

async function main(): Promise<void> {
  const topic = process.env.TOC_TOPIC ?? "";
  if (topic === "") {
    throw new Error("TOC_TOPIC names the pull topic to work");
  }
  const stop = new AbortController();
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => stop.abort());
  }
  let n = 0;
  const opts: WorkOptions = { signal: stop.signal, concurrency: Number(process.env.TOC_CONCURRENCY ?? "1") };
  if (process.env.TOC_MAX_JOBS !== undefined) {
    opts.maxJobs = Number(process.env.TOC_MAX_JOBS);
  }
  await work(process.env.TOC_URL ?? "http://127.0.0.1:8080", process.env.TOC_TOKEN ?? "", topic, async (job) => {
    n++;
    console.log(`job ${job.id} attempt ${job.attempt}: ${JSON.stringify(job)}`);
  }, opts);
  console.log(`worked ${n} job(s)`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
