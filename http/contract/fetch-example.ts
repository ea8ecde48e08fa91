// A client of toc's REST API written with openapi-fetch over the types
// that openapi-typescript generates from ../openapi.json (toc-api.d.ts),
// both at their defaults: it schedules a job whose biz_id is the largest
// unsigned 64-bit integer, reads it back, finds it by status (openapi-fetch
// sends a list as the parameter repeated, status=a&status=b), cancels it,
// finds it among the cancelled jobs and checks that a second cancel is a
// 409.
//
//	TOC_URL=http://127.0.0.1:8080 TOC_TOKEN=... npx tsx fetch-example.ts
//
// It prints each step and exits 1 on the first mismatch.

import createClient from "openapi-fetch";
import type { components, paths } from "./toc-api.js";

type Job = components["schemas"]["Job"];
type Status = components["schemas"]["Status"];

const BIZ_ID = "18446744073709551615";
const TOPIC = "contract-fetch";

const baseUrl = (process.env.TOC_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
const token = process.env.TOC_TOKEN ?? "";
// The job is cancelled long before it is due, so nothing is ever called.
const callbackURL = process.env.TOC_CALLBACK_URL ?? "http://127.0.0.1:9/toc-example";

const client = createClient<paths>({
  baseUrl,
  headers: token === "" ? {} : { Authorization: `Bearer ${token}` },
});

class Mismatch extends Error {}

function expect(ok: boolean, what: string): void {
  if (!ok) {
    throw new Mismatch(what);
  }
}

function checkJob(j: Job, id: string, status: Status, when: string): void {
  expect(j.id === id, `${when}: id ${j.id}, want ${id}`);
  expect(j.biz_id === BIZ_ID, `${when}: biz_id ${String(j.biz_id)}, want ${BIZ_ID}`);
  expect(j.status === status, `${when}: status ${j.status}, want ${status}`);
}

// find lists the topic's jobs of BIZ_ID in the statuses given.
async function find(what: string, status: Status[]): Promise<Job[]> {
  const { data, error, response } = await client.GET("/v1/jobs", {
    params: { query: { topic: TOPIC, biz_id: BIZ_ID, status } },
  });
  if (data === undefined) {
    throw new Mismatch(`${what}: HTTP ${response.status} ${JSON.stringify(error)}`);
  }
  const url = new URL(response.url);
  console.log(`${what}: GET ${url.pathname}${url.search}: ${data.jobs.length} job(s)`);
  return data.jobs;
}

async function main(): Promise<void> {
  const created = await client.POST("/v1/jobs", {
    body: { topic: TOPIC, biz_id: BIZ_ID, delay_ms: 3_600_000, callback_url: callbackURL, payload: { from: "fetch-example.ts" } },
  });
  if (created.data === undefined || created.response.status !== 201) {
    throw new Mismatch(`schedule: HTTP ${created.response.status} ${JSON.stringify(created.error)}`);
  }
  const id = created.data.id;
  checkJob(created.data, id, "pending", "schedule");
  console.log(`scheduled job ${id} in ${created.data.topic}, due ${created.data.fire_at}, biz_id ${created.data.biz_id}`);

  const got = await client.GET("/v1/jobs/{id}", { params: { path: { id } } });
  if (got.data === undefined) {
    throw new Mismatch(`read back: HTTP ${got.response.status} ${JSON.stringify(got.error)}`);
  }
  checkJob(got.data, id, "pending", "read back");
  console.log(`read back: status ${got.data.status}, biz_id ${got.data.biz_id} round-trips exactly`);

  const has = (jobs: Job[]): boolean => jobs.some((j) => j.id === id);
  expect(has(await find("find pending or cancelled", ["pending", "cancelled"])), `job ${id} not found pending or cancelled`);

  const cancelled = await client.DELETE("/v1/jobs/{id}", { params: { path: { id } } });
  if (cancelled.data === undefined) {
    throw new Mismatch(`cancel: HTTP ${cancelled.response.status} ${JSON.stringify(cancelled.error)}`);
  }
  checkJob(cancelled.data, id, "cancelled", "cancel");
  console.log(`cancelled: status ${cancelled.data.status}`);

  expect(!has(await find("find pending or firing", ["pending", "firing"])), `cancelled job ${id} found pending or firing`);
  expect(has(await find("find cancelled or done", ["cancelled", "done"])), `job ${id} not found cancelled or done`);

  const again = await client.DELETE("/v1/jobs/{id}", { params: { path: { id } } });
  if (again.response.status !== 409 || again.error === undefined) {
    throw new Mismatch(`cancel again: HTTP ${again.response.status}, want 409`);
  }
  expect(again.error.error.code === "conflict", `cancel again: code ${again.error.error.code}, want conflict`);
  console.log(`cancel again: 409 ${again.error.error.code}`);
  console.log("ok");
}

main().catch((err: unknown) => {
  console.error(err instanceof Mismatch ? `mismatch: ${err.message}` : err);
  process.exit(1);
});
