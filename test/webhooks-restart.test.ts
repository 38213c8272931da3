// Webhook delivery survives SIGKILL: server/main.ts as a child process is killed while its
// attempts are in flight (the receiver holds them unanswered); a new process on the same database
// takes the jobs over once their leases run out. No event is lost, and a receiver that
// deduplicates by webhook-id processes each exactly once.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEncryptionKey } from "../server/security/secret-box.ts";
import { eventually } from "./support/eventually.ts";
import { type ServerDatabase, type ServerProcess, prepareServerDatabase, processTestBound, startServerProcess } from "./support/server-process.ts";

const EVENTS = 5;

/** Holds requests unanswered while `hold` is true; processes each webhook-id once. */
class DedupingReceiver {
  hold = true;
  secret = "";
  requests = 0;
  processed: string[] = [];
  private seen = new Set<string>();
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      this.requests += 1;
      if (this.hold) return; // in flight until the sender dies
      const body = Buffer.concat(chunks).toString("utf8");
      new Webhook(this.secret).verify(body, req.headers as Record<string, string>);
      const id = req.headers["webhook-id"] as string;
      if (!this.seen.has(id)) {
        this.seen.add(id);
        this.processed.push(id);
      }
      res.writeHead(204).end();
    });
  });
  url = "";
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
    return this;
  }
  close() {
    this.server.closeAllConnections();
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let database: ServerDatabase;
let receiver: DedupingReceiver;
const running: ServerProcess[] = [];
const env = () => ({
  ...database.envFor(0),
  CTD_ENCRYPTION_KEY: key,
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1",
  WEBHOOK_TIMEOUT_MS: "2000",
  WEBHOOK_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2,0.2,0.2,0.2,0.2",
});
const key = newEncryptionKey().toString("hex");

beforeAll(async () => {
  database = await prepareServerDatabase();
  receiver = await new DedupingReceiver().start();
});
afterAll(async () => {
  for (const server of running) await server.stop("SIGKILL");
  await receiver?.close();
  await database?.close();
});

async function call(server: ServerProcess, method: string, path: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
    method,
    headers: { "x-api-key": database.tenant.key, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("webhook delivery across SIGKILL", () => {
  it("when the service is killed with attempts in flight, then a new process delivers every event and the receiver processes each once", async () => {
    const first = await startServerProcess(env());
    running.push(first);
    const created = await call(first, "POST", "/v1/webhooks/endpoints", { url: receiver.url, eventTypes: ["lead.created"] });
    expect(created.status).toBe(201);
    receiver.secret = created.body.secret as string;
    const endpointId = created.body.endpointId as string;
    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const sent = await call(first, "POST", `/v1/webhooks/endpoints/${endpointId}/test`);
      expect(sent.status).toBe(202);
      ids.push(sent.body.deliveryId as string);
    }
    // the attempts are in flight (held by the receiver) when the process dies
    await eventually(() => expect(receiver.requests).toBeGreaterThanOrEqual(1));
    expect(await first.stop("SIGKILL")).toBeNull();
    receiver.hold = false;

    const second = await startServerProcess(env());
    running.push(second);
    // Done when the service has recorded every delivery, not as soon as the receiver has answered
    // every event: the service writes an attempt's outcome after the answer arrives.
    type Delivery = { deliveryId: string; state: string; attempts: { statusCode: number | null }[] };
    const listDeliveries = async () => (await call(second, "GET", `/v1/webhooks/endpoints/${endpointId}/deliveries`)).body.data as Delivery[];
    const deliveries = await eventually(
      async () => {
        const listed = await listDeliveries();
        expect(listed.map((d) => d.state)).toEqual(Array(EVENTS).fill("delivered"));
        return listed;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect([...receiver.processed].sort()).toEqual([...ids].sort());
    for (const d of deliveries) expect(d.attempts.at(-1)!.statusCode).toBe(204);
    await second.stop("SIGTERM");
  }, processTestBound(2)); // two service processes start in turn
});
