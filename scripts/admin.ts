// Operator commands: what the specification calls "account settings". `npm run admin -- --help`
// lists them with their options (USAGE below); `npm run admin -- <command> --help` shows one.
// An operator's network type for an AS (`networks set-type`) is in effect in every running
// process within TRACKING_SETTINGS_TTL_SECONDS (60 s by default).
// Add --json for machine-readable output. Works on DATABASE_URL or the embedded database: while
// `npm start` runs on it, through the socket the running service's database process serves it on.
import { parseArgs } from "node:util";
import { type Config, loadOperatorConfig } from "../server/config.ts";
import { type Database, openDatabaseOrExit } from "../server/db/database.ts";
import { DomainError } from "../server/domain/errors.ts";
import { createServices, type Services } from "../server/services/index.ts";
import { writeProfiles } from "../server/contacts/generate.ts";
import { ImportFileError, importContacts, type ImportFormat } from "../server/contacts/import.ts";
import { deadLetterCommand, type DeadLetterAction } from "../server/tracking/dead-letters.ts";

const DAY_MS = 86_400_000;

/** Each command's options, for `--help` and for a mistake. */
const USAGE: Record<string, string> = {
  "account create": "--name N --admin-email E --admin-name A [--licence-days 365]",
  "account licence": "--account ID --days N",
  "keys create": "--account ID --label L [--expires-days N]",
  "keys list": "--account ID",
  "keys revoke": "--key ID",
  "contacts import": "FILE [--format ndjson|csv] [--batch-size 1000] [--progress]",
  "contacts generate": "--count N [--seed 1] --out FILE   (no database needed)",
  "credits set-limit": "--dataset ID --limit N",
  "networks set-type": "--asn N --type business|isp|hosting|mobile|education [--note TEXT]",
  "networks list": "",
  "networks remove": "--asn N",
  "dead-letters list": "[--limit 100]",
  "dead-letters replay": "ID   (back into the ingest log, then out of the dead-letter table)",
  "dead-letters drop": "ID",
};

function usage(command?: string): string {
  if (command && command in USAGE) return `usage: npm run admin -- ${command} ${USAGE[command]} [--json]`.replace(/ {2,}/g, " ");
  return [
    "usage: npm run admin -- <command> [options] [--json]",
    "commands:",
    ...Object.entries(USAGE).map(([name, options]) => `  ${name} ${options}`.trimEnd()),
    "`npm run admin -- <command> --help` shows one command's options.",
  ].join("\n");
}

/** The arguments; an unknown or malformed option is one line and the usage, not a stack trace. */
function parseArguments() {
  try {
    return parseArgs({ allowPositionals: true, options: OPTIONS });
  } catch (error) {
    console.error(`${(error as Error).message}\n${usage()}`);
    process.exit(2);
  }
}

const OPTIONS = {
    name: { type: "string" },
    "admin-email": { type: "string" },
    "admin-name": { type: "string" },
    "licence-days": { type: "string", default: "365" },
    days: { type: "string" },
    account: { type: "string" },
    label: { type: "string" },
    "expires-days": { type: "string" },
    key: { type: "string" },
    format: { type: "string" },
    "batch-size": { type: "string", default: "1000" },
    progress: { type: "boolean", default: false },
    count: { type: "string" },
    seed: { type: "string", default: "1" },
    out: { type: "string" },
    dataset: { type: "string" },
    limit: { type: "string" },
    asn: { type: "string" },
    type: { type: "string" },
    note: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
} as const;

const { positionals, values } = parseArguments();

class UsageError extends Error {}

function required(name: keyof typeof values): string {
  const value = values[name];
  if (typeof value !== "string" || !value) throw new UsageError(`--${name} is required`);
  return value;
}

function days(name: keyof typeof values): number {
  const n = Number(required(name));
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number of days`);
  return n;
}

function whole(name: keyof typeof values, min = 0): number {
  const n = Number(required(name));
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} must be a whole number of at least ${min}`);
  return n;
}

/** Prints `data` as JSON with --json, else as the human text. */
function out(data: unknown, text: string): void {
  console.log(values.json ? JSON.stringify(data, null, 2) : text);
}

/** Commands that need no database (the embedded one may stay open in `npm start`). */
const offline: Record<string, () => Promise<void>> = {
  async "contacts generate"() {
    const [count, seed, out] = [whole("count", 1), whole("seed"), required("out")];
    await writeProfiles(out, seed, count);
    console.error(`wrote ${count} profiles (seed ${seed}) to ${out}`);
  },
};

/** The dead-letter commands (server/tracking/dead-letters.ts): `list`, or `replay`/`drop` of the ID that follows. */
async function deadLetters(action: DeadLetterAction, { db, config }: Context): Promise<void> {
  const id = positionals[2];
  if (action !== "list" && !id) throw new UsageError(`name the dead letter: dead-letters ${action} ID`);
  const { data, text } = await deadLetterCommand(db.prisma, config, action, { id, limit: values.limit ? whole("limit", 1) : undefined });
  out(data, text);
}

/** What a command may need besides the services: the database and the configuration. */
interface Context {
  db: Database;
  config: Config;
}

const commands: Record<string, (s: Services, context: Context) => Promise<void>> = {
  async "account create"(s) {
    const adminEmail = required("admin-email");
    const result = await s.accounts.createAccount({
      name: required("name"),
      licenceDays: days("licence-days"),
      admin: { email: adminEmail, name: values["admin-name"] ?? adminEmail },
    });
    out(result, `account ${result.accountId} created; admin user id ${result.adminUserId}`);
  },
  async "account licence"(s) {
    const validUntil = new Date(Date.now() + days("days") * DAY_MS);
    await s.accounts.setLicence(required("account"), validUntil);
    out({ accountId: values.account, licenceValidUntil: validUntil }, `licence valid until ${validUntil.toISOString()}`);
  },
  async "keys create"(s) {
    const expiresAt = values["expires-days"] ? new Date(Date.now() + days("expires-days") * DAY_MS) : undefined;
    const { key, info } = await s.accounts.createApiKey(required("account"), required("label"), expiresAt);
    out({ ...info, key }, `key ${info.id} (${info.label}) created. Copy it now, it is not shown again:\n${key}`);
  },
  async "keys list"(s) {
    const keys = await s.accounts.listApiKeys(required("account"));
    const state = (k: (typeof keys)[number]) =>
      k.revokedAt ? "revoked" : k.expiresAt && k.expiresAt <= new Date() ? "expired" : "active";
    const text = keys
      .map((k) => `${k.id}  ${state(k).padEnd(7)}  ${k.label}  created ${k.createdAt.toISOString()}  last used ${k.lastUsedAt?.toISOString() ?? "never"}`)
      .join("\n");
    out(keys, text || "no keys");
  },
  async "keys revoke"(s) {
    const keyId = required("key");
    if (!(await s.accounts.revokeApiKey(keyId))) throw new UsageError(`no key ${keyId}`);
    out({ id: keyId, revoked: true }, `key ${keyId} revoked`);
  },
  async "contacts import"(s) {
    const file = positionals[2];
    if (!file) throw new UsageError("name the file: contacts import FILE");
    const format = values.format as ImportFormat | undefined;
    if (format && format !== "ndjson" && format !== "csv") throw new UsageError("--format must be ndjson or csv");
    const summary = await importContacts({
      file,
      format,
      store: s.contacts,
      batchSize: whole("batch-size", 1),
      progress: values.progress || !!process.stderr.isTTY,
    });
    const { records, inserted, updated, unchanged, superseded, rejected, seconds } = summary;
    out(summary, `${records} records in ${seconds.toFixed(1)} s: ${inserted} inserted, ${updated} updated, ${unchanged} unchanged, ` +
      `${superseded} superseded by a later line, ${rejected} rejected`);
  },
  async "credits set-limit"(s) {
    const [datasetId, limit] = [required("dataset"), whole("limit")];
    if (!(await s.credits.setMonthlyLimit(datasetId, limit))) throw new UsageError(`no dataset ${datasetId}`);
    out({ datasetId, monthlyCreditLimit: limit }, `dataset ${datasetId}: ${limit} credits per calendar month (UTC)`);
  },
  async "networks set-type"(s) {
    const saved = await s.networks.setType(whole("asn", 1), required("type"), values.note);
    out(saved, `AS${saved.asn}: ${saved.type} (in effect everywhere within the tracking settings' cache time)`);
  },
  async "networks list"(s) {
    const overrides = await s.networks.list();
    const text = overrides.map((o) => `AS${o.asn}  ${o.type.padEnd(9)}  set ${o.updatedAt.toISOString()}${o.note ? `  ${o.note}` : ""}`).join("\n");
    out(overrides, text || "no overrides");
  },
  async "networks remove"(s) {
    const asn = whole("asn", 1);
    if (!(await s.networks.remove(asn))) throw new UsageError(`no override for AS${asn}`);
    out({ asn, removed: true }, `AS${asn}: override removed (the curated lists and the rule apply again)`);
  },
  "dead-letters list": (_s, context) => deadLetters("list", context),
  "dead-letters replay": (_s, context) => deadLetters("replay", context),
  "dead-letters drop": (_s, context) => deadLetters("drop", context),
};

async function main(): Promise<number> {
  const name = positionals.slice(0, 2).join(" ");
  const command = commands[name];
  if (values.help) {
    console.log(usage(name));
    return 0;
  }
  if (!command && !offline[name]) {
    console.error(usage());
    return 2;
  }
  try {
    if (offline[name]) await offline[name]();
    else await withDatabase(command!);
    return 0;
  } catch (error) {
    if (error instanceof UsageError || error instanceof ImportFileError) {
      console.error(error.message);
      return 2;
    }
    if (error instanceof DomainError) {
      console.error(error.message); // an unknown account or dataset: one line, not a stack
      return 1;
    }
    throw error;
  }
}

async function withDatabase(command: (s: Services, context: Context) => Promise<void>): Promise<void> {
  // a running service's embedded database is shared (it applied the migrations when it started)
  const config = loadOperatorConfig(process.env);
  const db = await openDatabaseOrExit(config.database, { share: true, connections: 2 });
  try {
    await db.migrate();
    await command(createServices(db.prisma, { config }), { db, config });
  } finally {
    await db.close();
  }
}

process.exitCode = await main();
