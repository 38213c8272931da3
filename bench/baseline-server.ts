// The floor the service is measured against: the paid look-up written by hand on node:http + pg,
// nothing else. Per request, three round trips and the same rules: the key (not revoked, not
// expired) and the account's licence; the contact by normalised e-mail (404 when absent); the
// conditional charge and its ledger entry in one statement (402 when no credit is left).
// No validation, logging, rate limit or Idempotency-Key: what any service has to pay at least.
// BASELINE_EXPERT=1 adds what an expert adds by hand, within the service's own bounds: named
// prepared statements (parsed and planned once per connection) and a 5-second cache of keys.
//   DATABASE_URL=... PORT=... [BASELINE_EXPERT=1] node --import tsx bench/baseline-server.ts
import { createHash } from "node:crypto";
import http from "node:http";
import pg from "pg";
import { chargeStatement } from "../server/services/credits.ts";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
const expert = process.env.BASELINE_EXPERT === "1";
/** The service's bound on how long a revoked key may still be honoured. */
const KEY_CACHE_MS = 5_000;
const keyCache = new Map<string, { key: Key | undefined; until: number }>();

interface Key {
  id: string;
  accountId: string;
}

/** Plain: the text is parsed and planned at every call; expert: prepared once per connection, named by its text. */
function query(text: string, values: unknown[]) {
  if (!expert) return pool.query(text, values);
  const name = `q${createHash("sha1").update(text).digest("hex").slice(0, 16)}`;
  return pool.query({ name, text, values });
}

async function keyOf(apiKey: string): Promise<Key | undefined> {
  const hash = createHash("sha256").update(apiKey).digest("hex");
  const hit = expert ? keyCache.get(hash) : undefined;
  if (hit && hit.until > Date.now()) return hit.key;
  const key = (await query(KEY_SQL, [hash])).rows[0] as Key | undefined;
  if (expert) keyCache.set(hash, { key, until: Date.now() + KEY_CACHE_MS });
  return key;
}

const KEY_SQL = `
  SELECT k.id, k."accountId" FROM "ApiKey" k JOIN "Account" a ON a.id = k."accountId"
  WHERE k.hash = $1 AND k."revokedAt" IS NULL AND (k."expiresAt" IS NULL OR k."expiresAt" > now())
    AND a."licenceValidUntil" > now()`;
const CONTACT_SQL = `
  SELECT email, "fullName", headline, "linkedinUrl", seniority, "jobFunction", location, languages, experience
  FROM "Contact" WHERE email = $1`;

function answer(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}

async function lookup(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const { email } = JSON.parse(await readBody(req)) as { email: string };
  const key = await keyOf(String(req.headers["x-api-key"]));
  if (!key) return answer(res, 401, { error: "invalid_api_key", message: "The API key is not valid" });
  const contact = (await query(CONTACT_SQL, [email.trim().toLowerCase()])).rows[0] as Record<string, unknown> | undefined;
  if (!contact) return answer(res, 404, { error: "profile_not_found", message: "No profile" });
  const charge = { accountId: key.accountId, keyId: key.id, operation: "lookupEmail", at: new Date() };
  const statement = chargeStatement(charge);
  const { rows } = await query(statement.text, statement.values);
  if (!rows[0]?.charged) return answer(res, 402, { error: "credit_limit_exceeded", message: "No credit left" });
  for (const [field, value] of Object.entries(contact)) if (value === null) delete contact[field];
  answer(res, 200, contact);
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/v1/email-lookup") return answer(res, 404, { error: "not_found" });
  lookup(req, res).catch((error: Error) => answer(res, 500, { error: "internal_error", message: error.message }));
});
server.keepAliveTimeout = 5_000;
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1");
process.on("SIGTERM", () => server.close(() => void pool.end().then(() => process.exit(0))));
