// A webhook receiver on loopback for the tests: answers from a script (then 200) and verifies
// every request with the standardwebhooks library's own verifier.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Received {
  headers: Record<string, string>;
  body: string;
  /** What Webhook.verify returned (the parsed body), with the endpoint's current secret. */
  verified: { type: string; timestamp: string; data: Record<string, unknown> };
}

export type Answer = { status: number; headers?: Record<string, string> };

/** A webhook receiver: answers from a script (then 200), verifies every request's signature. */
export class Receiver {
  received: Received[] = [];
  script: Answer[] = [];
  secret = "";
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = req.headers as Record<string, string>;
      // throws on a bad signature or a stale timestamp: the test then sees no such request
      const verified = new Webhook(this.secret).verify(body, headers) as Received["verified"];
      this.received.push({ headers, body, verified });
      const answer = this.script.shift() ?? { status: 200 };
      res.writeHead(answer.status, answer.headers ?? {});
      res.end();
    });
  });
  url = "";
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
    return this;
  }
  close() {
    return new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

