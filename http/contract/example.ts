// A client of toc's REST API written against the types that
// openapi-typescript generates from ../openapi.json (toc-api.d.ts), with
// nothing but fetch: it schedules a job whose biz_id is the largest
// unsigned 64-bit integer, reads it back, checks the biz_id came back
// digit for digit, cancels it and checks the answer and the status.
//
//	TOC_URL=http://127.0.0.1:8080 TOC_TOKEN=... npx tsx example.ts
//
// It prints each step and exits 1 on the first mismatch.

import type { components, operations } from "./toc-api.js";

type Job = components["schemas"]["Job"];
type NewJob = components["schemas"]["NewJob"];

// Answer<O> is what operation O may answer: its documented statuses, each
// with its JSON body, so that a switch on status narrows the body.
type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : undefined;
type Answer<O> = O extends { responses: infer R }
  ? { [S in keyof R]: { status: S; body: JSONOf<R[S]> } }[keyof R]
  : never;

// The largest unsigned 64-bit integer: as a JSON number it would reach
// JavaScript as 18446744073709552000, so toc sends it as a string.
const BIZ_ID = "18446744073709551615";

const base = (process.env.TOC_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
const token = process.env.TOC_TOKEN ?? "";
// The job is cancelled long before it is due, so nothing is ever called;
// toc serve refuses private addresses unless --allow-private-callbacks.
const callbackURL = process.env.TOC_CALLBACK_URL ?? "http://127.0.0.1:9/toc-example";

class Mismatch extends Error {}

function expect(ok: boolean, what: string): void {
  if (!ok) {
    throw new Mismatch(what);
  }
}

// call sends one request and returns its status and JSON body, typed as
// operation O answers.
async function call<O>(method: string, path: string, body?: unknown): Promise<Answer<O>> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (token !== "") {
    headers["Authorization"] = `Bearer ${token}`;
  }
  const init: RequestInit = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(base + path, init);
  const text = await resp.text();
  return { status: resp.status, body: text === "" ? undefined : JSON.parse(text) } as Answer<O>;
}

// refused describes an answer that was not the one expected.
function refused(what: string, a: { status: unknown; body: unknown }): Mismatch {
  return new Mismatch(`${what}: HTTP ${String(a.status)} ${JSON.stringify(a.body)}`);
}

function checkJob(j: Job, id: string, status: Job["status"], when: string): void {
  expect(j.id === id, `${when}: id ${j.id}, want ${id}`);
  expect(typeof j.biz_id === "string", `${when}: biz_id is a ${typeof j.biz_id}, want a string`);
  expect(j.biz_id === BIZ_ID, `${when}: biz_id ${String(j.biz_id)}, want ${BIZ_ID}`);
  expect(j.status === status, `${when}: status ${j.status}, want ${status}`);
}

async function main(): Promise<void> {
  const topic = "contract-example";
  const job: NewJob = {
    topic,
    biz_id: BIZ_ID,
    delay_ms: 3_600_000,
    callback_url: callbackURL,
    payload: { from: "example.ts" },
  };

  const created = await call<operations["scheduleJob"]>("POST", "/v1/jobs", job);
  if (created.status !== 201) {
    throw refused("schedule", created);
  }
  const id = created.body.id;
  checkJob(created.body, id, "pending", "schedule");
  console.log(`scheduled job ${id} in ${topic}, due ${created.body.fire_at}, biz_id ${created.body.biz_id}`);

  const got = await call<operations["getJob"]>("GET", `/v1/jobs/${id}`);
  if (got.status !== 200) {
    throw refused("read back", got);
  }
  checkJob(got.body, id, "pending", "read back");
  console.log(`read back: status ${got.body.status}, biz_id ${got.body.biz_id} round-trips exactly`);

  const found = await call<operations["findJobs"]>("GET", `/v1/jobs?topic=${topic}&biz_id=${BIZ_ID}&status=pending`);
  if (found.status !== 200) {
    throw refused("find by biz_id", found);
  }
  expect(found.body.jobs.some((j) => j.id === id), `find by biz_id: job ${id} is not among ${found.body.jobs.length}`);
  console.log(`found by biz_id: ${found.body.jobs.length} pending job(s), ${id} among them`);

  const cancelled = await call<operations["cancelJob"]>("DELETE", `/v1/jobs/${id}`);
  if (cancelled.status !== 200) {
    throw refused("cancel", cancelled);
  }
  checkJob(cancelled.body, id, "cancelled", "cancel");
  console.log(`cancelled: status ${cancelled.body.status}`);

  const again = await call<operations["cancelJob"]>("DELETE", `/v1/jobs/${id}`);
  if (again.status !== 409) {
    throw refused("cancel again", again);
  }
  expect(again.body.error.code === "conflict", `cancel again: code ${again.body.error.code}, want conflict`);
  console.log(`cancel again: 409 ${again.body.error.code}`);

  const after = await call<operations["getJob"]>("GET", `/v1/jobs/${id}`);
  if (after.status !== 200) {
    throw refused("read after cancel", after);
  }
  checkJob(after.body, id, "cancelled", "read after cancel");
  console.log(`read after cancel: status ${after.body.status}`);
  console.log("ok");
}

main().catch((err: unknown) => {
  console.error(err instanceof Mismatch ? `mismatch: ${err.message}` : err);
  process.exit(1);
});
