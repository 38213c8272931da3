// The floor bench:collect measures the collector against: a durable collector written by hand on
// node:http + pg, nothing else. Per request: read the body, parse it, one multi-row INSERT of its
// events (committed), then 202 with the same body as the service's. No validation, resolution,
// bot test, rate limit or logging: what any durable collector has to pay at least.
//   DATABASE_URL=... PORT=... node --import tsx bench/collect-floor.ts
import http from "node:http";
import pg from "pg";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
await pool.query(`CREATE TABLE IF NOT EXISTS floor_event (id bigserial PRIMARY KEY, dataset_id text NOT NULL, received_at timestamptz NOT NULL, event jsonb NOT NULL)`);

const INSERT = `INSERT INTO floor_event (dataset_id, received_at, event) SELECT $1, now(), e FROM jsonb_array_elements($2::jsonb) AS e`;

function answer(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function collect(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  let text = "";
  for await (const chunk of req) text += chunk;
  const { events } = JSON.parse(text) as { events: unknown[] };
  const dataset = new URL(req.url!, "http://floor").searchParams.get("dataset");
  await pool.query(INSERT, [dataset, JSON.stringify(events)]);
  answer(res, 202, { received: events.length, queued: events.length });
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || !req.url?.startsWith("/collect")) return answer(res, 404, { error: "not_found" });
  collect(req, res).catch((error: Error) => answer(res, 500, { error: "internal_error", message: error.message }));
});
server.keepAliveTimeout = 5_000;
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1");
process.on("SIGTERM", () => server.close(() => void pool.end().then(() => process.exit(0))));
