// An example receiver of toc's webhooks, in Node with the Standard Webhooks
// library (npm: standardwebhooks) and node:http alone.
//
// It shows what every receiver should do:
//
//   - verify the signature, and answer 401 to a request that fails it; it
//     accepts any of several secrets, so that a secret can be rotated (toc
//     signs each delivery with every secret it is given);
//   - dedupe on webhook-id: toc delivers at least once, and the id is the
//     job's on every attempt, so a repeat is answered as before and not
//     processed again;
//   - answer 2xx when the job is done, or 410 Gone to stop it: toc then
//     cancels the job and calls no more. Here a job stops when its payload
//     says {"stop": true}.
//
// It logs one line per delivery on stdout.
//
// Usage (after npm ci in this folder):
//
//   WEBHOOK_SECRETS=whsec_OLD,whsec_NEW ADDR=127.0.0.1:9001 node server.js
//
// WEBHOOK_SECRETS holds the secrets, separated by commas or spaces (the form
// of toc's TOC_WEBHOOK_SECRET); ADDR is the address to listen on (default
// 127.0.0.1:9001; port 0 picks a free one, logged at start). Point a job's
// callback_url at any path of it.
"use strict";

const http = require("node:http");
const { Webhook, WebhookVerificationError } = require("standardwebhooks");

// Bounds what one delivery may send.
const MAX_BODY = 1 << 20;
// Bounds the webhook ids remembered for dedupe. The library refuses a
// timestamp more than 5 minutes away, so a replay older than that fails the
// signature check; a repeat within it is caught as long as fewer than
// MAX_SEEN deliveries came in between. A receiver with more than one process
// keeps the ids in its database instead (a unique key, in the transaction
// that does the work).
const MAX_SEEN = 100000;

// log writes one logfmt line, like Go's slog text handler.
function log(msg, attrs) {
  const fields = { time: new Date().toISOString(), level: "INFO", msg, ...attrs };
  const quote = (v) => {
    const s = String(v);
    return s === "" || /[\s"=\\]|[^\x21-\x7e]/.test(s) ? JSON.stringify(s) : s;
  };
  const line = Object.entries(fields)
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join(" ");
  process.stdout.write(line + "\n");
}

// parseSecrets reads whsec_ secrets separated by commas or spaces. Its
// errors never quote a secret.
function parseSecrets(list) {
  const secrets = (list || "").split(/[, ]+/).filter((s) => s !== "");
  if (secrets.length === 0) {
    throw new Error("WEBHOOK_SECRETS is empty: give the secrets toc signs with (toc dev prints its own)");
  }
  return secrets.map((s, i) => {
    if (!s.startsWith("whsec_") || s.length <= "whsec_".length) {
      throw new Error(`WEBHOOK_SECRETS: secret ${i + 1} does not have the form whsec_<base64>`);
    }
    try {
      return new Webhook(s);
    } catch {
      throw new Error(`WEBHOOK_SECRETS: secret ${i + 1} is not valid base64 after whsec_`);
    }
  });
}

// SeenSet remembers the last n webhook ids and the status answered to each,
// forgetting the oldest first (a Map iterates in insertion order).
class SeenSet {
  constructor(n) {
    this.n = n;
    this.status = new Map();
  }

  // add remembers id with the status answered to it, unless it is known:
  // then it returns the status first answered.
  add(id, status) {
    if (this.status.has(id)) {
      return { status: this.status.get(id), dup: true };
    }
    if (this.status.size >= this.n) {
      this.status.delete(this.status.keys().next().value);
    }
    this.status.set(id, status);
    return { status, dup: false };
  }
}

// verify reports whether one of the secrets signed the request. body is the
// bytes exactly as received.
function verify(hooks, body, headers) {
  for (const wh of hooks) {
    try {
      wh.verify(body, headers, { jsonParse: false });
      return true;
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) {
        throw err;
      }
    }
  }
  return false;
}

// wantsStop reports whether a job's payload asks to stop: {"stop": true}.
function wantsStop(payload) {
  return payload !== null && typeof payload === "object" && payload.stop === true;
}

function handler(hooks, seen) {
  return (req, res) => {
    const id = req.headers["webhook-id"] || "";
    const answer = (d, status, result) => {
      log("delivery", { id, topic: d.topic || "", attempt: d.attempt || 0, status, result });
      res.writeHead(status).end();
    };
    if (req.method !== "POST") {
      res.setHeader("Allow", "POST");
      res.writeHead(405).end("POST only\n");
      return;
    }
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        tooLarge = true;
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (tooLarge) {
        answer({}, 413, "too_large");
        return;
      }
      const body = Buffer.concat(chunks);
      // Verify before reading anything else.
      if (!verify(hooks, body, req.headers)) {
        answer({}, 401, "bad_signature");
        return;
      }
      let d;
      try {
        d = JSON.parse(body.toString("utf8"));
      } catch {
        answer({}, 400, "bad_body");
        return;
      }
      if (d === null || typeof d !== "object") {
        answer({}, 400, "bad_body");
        return;
      }
      // The job's work would go here, before the id is remembered; if it
      // failed, answer 5xx and do not remember the id, so the retry does it.
      let status = 204;
      let result = "processed";
      if (wantsStop(d.payload)) {
        status = 410;
        result = "stopped";
      }
      const seenBefore = seen.add(id, status);
      if (seenBefore.dup) {
        status = seenBefore.status; // the same answer as the first time
        result = "duplicate";
      }
      answer(d, status, result);
    });
    req.on("error", () => res.destroy());
  };
}

function main() {
  let hooks;
  try {
    hooks = parseSecrets(process.env.WEBHOOK_SECRETS);
  } catch (err) {
    log("receiver stopped", { level: "ERROR", err: err.message });
    process.exit(1);
  }
  const addr = process.env.ADDR || "127.0.0.1:9001";
  const i = addr.lastIndexOf(":");
  const host = addr.slice(0, i).replace(/^\[|\]$/g, "") || undefined;
  const port = Number(addr.slice(i + 1));
  const server = http.createServer(handler(hooks, new SeenSet(MAX_SEEN)));
  server.headersTimeout = 10000;
  server.listen(port, host, () => {
    const a = server.address();
    const listening = a.family === "IPv6" ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
    log("receiver listening", { addr: listening, secrets: hooks.length });
  });
  server.on("error", (err) => {
    log("receiver stopped", { err: err.message });
    process.exit(1);
  });
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, () => server.close(() => process.exit(0)));
  }
}

main();
