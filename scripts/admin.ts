// Operator commands: what the specification calls "account settings". `npm run admin -- --help`
// lists them with their options; `npm run admin -- <command> --help` shows one.
// An operator's network type for an AS (`networks set-type`) is in effect in every running
// process within TRACKING_SETTINGS_TTL_SECONDS (60 s by default).
// Add --json for machine-readable output. Works on DATABASE_URL or the embedded database: while
// `npm start` runs on it, through the socket the running service's database process serves it on.
//
// Start time: this file imports nothing of the server at the top. Each command imports the
// modules it uses when it runs, and opens the database only when it asks for it, so `--help`, a
// mistake or `contacts generate` never load Prisma, the database or the service layer.
// Exit codes: 2 for a mistake on the command line (the usage follows), 1 when the command ran and
// failed (an unknown account, a file that cannot be read).
import { parseArgs } from "node:util";
import { closestMatch } from "leven";
import type { Config } from "../server/config.ts";
import type { Database } from "../server/db/database.ts";
import { DomainError } from "../server/domain/errors.ts";
import type { Services } from "../server/services/index.ts";
import type { DeadLetterAction } from "../server/tracking/log/dead-letter-command.ts";

const DAY_MS = 86_400_000;

/** Every option a command may take; each command names the ones it accepts. */
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
  all: { type: "boolean", default: false },
  code: { type: "string" },
  asn: { type: "string" },
  type: { type: "string" },
  note: { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;
type OptionName = keyof typeof OPTIONS;
/** What every command accepts besides its own options. */
const COMMON: readonly OptionName[] = ["json", "help"];

/** A mistake on the command line: its message, then the usage, exit 2. */
class UsageError extends Error {
  constructor(message: string, readonly command?: string) {
    super(message);
  }
}
/** `<group> --help`: the group's commands with their options, exit 0. */
class GroupHelp extends Error {
  constructor(readonly group: string) {
    super(`help for '${group}'`);
  }
}
/** The command ran and could not do what was asked: one line, exit 1. */
class CommandFailed extends Error {}

/** A command's options and operands as parsed, read through the checks every command shares. */
class Args {
  constructor(
    private readonly values: Partial<Record<OptionName, string | boolean>>,
    /** The operands after the command's two words (`contacts import FILE`). */
    readonly operands: readonly string[],
  ) {}

  optional(name: OptionName): string | undefined {
    const value = this.values[name];
    return typeof value === "string" ? value : undefined;
  }

  flag(name: OptionName): boolean {
    return this.values[name] === true;
  }

  required(name: OptionName): string {
    const value = this.optional(name);
    if (!value) throw new UsageError(`--${name} is required`);
    return value;
  }

  days(name: OptionName): number {
    const n = Number(this.required(name));
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number of days`);
    return n;
  }

  whole(name: OptionName, min = 0): number {
    const n = Number(this.required(name));
    if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} must be a whole number of at least ${min}`);
    return n;
  }

  /** Prints `data` as JSON with --json, else as the human text. */
  out(data: unknown, text: string): void {
    console.log(this.flag("json") ? JSON.stringify(data, null, 2) : text);
  }
}

/** What a command may ask for; each is made on first use (and the database closed at the end). */
interface Context {
  config(): Promise<Config>;
  /** The database, migrated (or the running service's embedded one, which it migrated). */
  database(): Promise<Database>;
  /** Every service as the server builds them: imports the whole service layer, so prefer a service's own module. */
  services(): Promise<Services>;
}

interface Command {
  /** Operands and options, as the usage shows them. */
  usage: string;
  /** The options it accepts besides --json and --help. */
  options: readonly OptionName[];
  /** How many operands it takes after its two words (default none). */
  operands?: number;
  run(args: Args, context: Context): Promise<void>;
}

/** The commands, by their two words. */
const commands: Record<string, Command> = {
  "account create": {
    usage: "--name N --admin-email E --admin-name A [--licence-days 365]",
    options: ["name", "admin-email", "admin-name", "licence-days"],
    async run(args, context) {
      const [name, adminEmail, licenceDays] = [args.required("name"), args.required("admin-email"), args.days("licence-days")];
      const { createAccount, deps } = await accountModule(context);
      const result = await createAccount(deps, { name, licenceDays, admin: { email: adminEmail, name: args.optional("admin-name") ?? adminEmail } });
      args.out(result, `account ${result.accountId} created; admin user id ${result.adminUserId}`);
    },
  },
  "account licence": {
    usage: "--account ID --days N",
    options: ["account", "days"],
    async run(args, context) {
      const [accountId, validUntil] = [args.required("account"), new Date(Date.now() + args.days("days") * DAY_MS)];
      const { setLicence, deps } = await accountModule(context);
      await setLicence(deps, accountId, validUntil);
      args.out({ accountId, licenceValidUntil: validUntil }, `licence valid until ${validUntil.toISOString()}`);
    },
  },
  "keys create": {
    usage: "--account ID --label L [--expires-days N]",
    options: ["account", "label", "expires-days"],
    async run(args, context) {
      const [accountId, label] = [args.required("account"), args.required("label")];
      const expiresAt = args.optional("expires-days") ? new Date(Date.now() + args.days("expires-days") * DAY_MS) : undefined;
      const { createApiKey, deps } = await accountModule(context);
      const { key, info } = await createApiKey(deps, accountId, label, expiresAt);
      args.out({ ...info, key }, `key ${info.id} (${info.label}) created. Copy it now, it is not shown again:\n${key}`);
    },
  },
  "keys list": {
    usage: "--account ID",
    options: ["account"],
    async run(args, context) {
      const accountId = args.required("account");
      const { listApiKeys, deps } = await accountModule(context);
      const keys = await listApiKeys(deps, accountId);
      const state = (k: (typeof keys)[number]) =>
        k.revokedAt ? "revoked" : k.expiresAt && k.expiresAt <= new Date() ? "expired" : "active";
      const text = keys
        .map((k) => `${k.id}  ${state(k).padEnd(7)}  ${k.label}  created ${k.createdAt.toISOString()}  last used ${k.lastUsedAt?.toISOString() ?? "never"}`)
        .join("\n");
      args.out(keys, text || "no keys");
    },
  },
  "keys revoke": {
    usage: "--key ID",
    options: ["key"],
    async run(args, context) {
      const keyId = args.required("key");
      const { revokeApiKey, deps } = await accountModule(context);
      if (!(await revokeApiKey(deps, keyId))) throw new CommandFailed(`no key ${keyId}`);
      args.out({ id: keyId, revoked: true }, `key ${keyId} revoked`);
    },
  },
  "contacts import": {
    usage: "FILE [--format ndjson|csv] [--batch-size 1000] [--progress]",
    options: ["format", "batch-size", "progress"],
    operands: 1,
    async run(args, context) {
      const file = args.operands[0];
      if (!file) throw new UsageError("name the file: contacts import FILE");
      const format = args.optional("format");
      if (format !== undefined && format !== "ndjson" && format !== "csv") throw new UsageError("--format must be ndjson or csv");
      const batchSize = args.whole("batch-size", 1);
      const [{ importContacts, ImportFileError }, { importStore }] = await Promise.all([
        import("../server/contacts/import.ts"),
        import("../server/services/contacts.ts"),
      ]);
      const store = importStore({ db: (await context.database()).prisma });
      const summary = await importContacts({ file, format, store, batchSize, progress: args.flag("progress") || !!process.stderr.isTTY }).catch(
        (error: unknown) => {
          throw error instanceof ImportFileError ? new CommandFailed(error.message) : error;
        },
      );
      const { records, inserted, updated, unchanged, superseded, rejected, seconds } = summary;
      args.out(summary, `${records} records in ${seconds.toFixed(1)} s: ${inserted} inserted, ${updated} updated, ${unchanged} unchanged, ` +
        `${superseded} superseded by a later line, ${rejected} rejected`);
    },
  },
  "contacts generate": {
    usage: "--count N [--seed 1] --out FILE   (no database needed)",
    options: ["count", "seed", "out"],
    async run(args) {
      const [count, seed, out] = [args.whole("count", 1), args.whole("seed"), args.required("out")];
      const { writeProfiles } = await import("../server/contacts/generate.ts");
      await writeProfiles(out, seed, count);
      console.error(`wrote ${count} profiles (seed ${seed}) to ${out}`);
    },
  },
  "credits set-limit": {
    usage: "--dataset ID --limit N",
    options: ["dataset", "limit"],
    async run(args, context) {
      const [datasetId, limit] = [args.required("dataset"), args.whole("limit")];
      const { setMonthlyLimit } = await import("../server/services/credits.ts");
      const db = await context.database();
      if (!(await setMonthlyLimit({ db: db.prisma }, datasetId, limit))) throw new CommandFailed(`no dataset ${datasetId}`);
      args.out({ datasetId, monthlyCreditLimit: limit }, `dataset ${datasetId}: ${limit} credits per calendar month (UTC)`);
    },
  },
  "networks set-type": {
    usage: "--asn N --type business|government|isp|hosting|mobile|education [--note TEXT]",
    options: ["asn", "type", "note"],
    async run(args, context) {
      const [asn, type] = [args.whole("asn", 1), args.required("type")];
      const { networks, deps } = await networkCommands(context);
      const saved = await networks.setType(deps, asn, type, args.optional("note"));
      args.out(saved, `AS${saved.asn}: ${saved.type} (in effect everywhere within the tracking settings' cache time)`);
    },
  },
  "networks list": {
    usage: "",
    options: [],
    async run(args, context) {
      const { networks, deps } = await networkCommands(context);
      const overrides = await networks.list(deps);
      const text = overrides.map((o) => `AS${o.asn}  ${o.type.padEnd(9)}  set ${o.updatedAt.toISOString()}${o.note ? `  ${o.note}` : ""}`).join("\n");
      args.out(overrides, text || "no overrides");
    },
  },
  "networks remove": {
    usage: "--asn N",
    options: ["asn"],
    async run(args, context) {
      const asn = args.whole("asn", 1);
      const { networks, deps } = await networkCommands(context);
      if (!(await networks.remove(deps, asn))) throw new CommandFailed(`no override for AS${asn}`);
      args.out({ asn, removed: true }, `AS${asn}: override removed (the curated lists and the rule apply again)`);
    },
  },
  "dead-letters list": {
    usage: "[--limit 100] [--code SQLSTATE]   (oldest first)",
    options: ["limit", "code"],
    run: (args, context) => deadLetters("list", args, context),
  },
  "dead-letters replay": {
    usage: "ID | --all [--code SQLSTATE] [--limit N]   (back into the ingest log, then out of the dead-letter table; --all: oldest first)",
    options: ["all", "code", "limit"],
    operands: 1,
    run: (args, context) => deadLetters("replay", args, context),
  },
  "dead-letters drop": {
    usage: "ID",
    options: [],
    operands: 1,
    run: (args, context) => deadLetters("drop", args, context),
  },
};

/**
 * The dead-letter commands (server/tracking/log/dead-letters.ts): `list`, `drop` of the ID that
 * follows, `replay` of that ID or of every letter (`--all`, of one error code with `--code`).
 */
async function deadLetters(action: DeadLetterAction, args: Args, context: Context): Promise<void> {
  const id = args.operands[0];
  const selected = args.flag("all") || args.optional("code") !== undefined || args.optional("limit") !== undefined;
  if (action === "replay" && id !== undefined && selected) throw new UsageError("replay either one ID or --all (with --code, --limit), not both");
  if (action === "replay" && id === undefined && !args.flag("all")) throw new UsageError("name the dead letter, or replay them all: dead-letters replay ID | --all");
  if (action === "drop" && id === undefined) throw new UsageError("name the dead letter: dead-letters drop ID");
  const limit = args.optional("limit") !== undefined ? args.whole("limit", 1) : undefined;
  const [{ deadLetterCommand }, db, config] = await Promise.all([import("../server/tracking/log/dead-letter-command.ts"), context.database(), context.config()]);
  const { data, text, incomplete } = await deadLetterCommand(db.prisma, config, action, { id, limit, code: args.optional("code") });
  args.out(data, text);
  if (incomplete) throw new CommandFailed("some dead letters were left (the lines above say why): drop them or remove their cause");
}

/** The accounts module (loaded when a command needs it) and the deps its functions take. */
async function accountModule(context: Context) {
  const [accounts, db] = await Promise.all([import("../server/services/accounts.ts"), context.database()]);
  return { ...accounts, deps: { db: db.prisma, hotSql: db.sql, keyCache: accounts.newKeyCache() } };
}

/** The operators' network types (server/services/networks.ts) and the database they are written to. */
async function networkCommands(context: Context) {
  const [networks, db] = await Promise.all([import("../server/services/networks.ts"), context.database()]);
  return { networks, deps: { db: db.prisma } };
}

/** One command's usage; or the list of commands (those of `group` only when it is given). */
function usage(command?: string, group?: string): string {
  if (command && commands[command]) return `usage: npm run admin -- ${command} ${commands[command].usage} [--json]`.replace(/ {2,}/g, " ");
  const listed = Object.entries(commands).filter(([name]) => !group || name.startsWith(`${group} `));
  return [
    "usage: npm run admin -- <command> [options] [--json]",
    "commands:",
    ...listed.map(([name, { usage }]) => `  ${name} ${usage}`.trimEnd()),
    "`npm run admin -- <command> --help` shows one command's options.",
  ].join("\n");
}

/** " did you mean 'x'?" for the candidate nearest to a mistyped word, or nothing when none is near. */
function suggestion(word: string, candidates: readonly string[]): string {
  const prefixed = candidates.filter((c) => c.startsWith(word));
  const nearest = word && prefixed.length === 1 ? prefixed[0] : closestMatch(word, candidates, { maxDistance: Math.max(2, Math.floor(word.length / 3)) });
  return nearest ? `; did you mean '${nearest}'?` : "";
}

/** The command named by the first two words of `argv`. */
function findCommand(argv: readonly string[]): string {
  const [group = "", sub] = argv;
  const groups = [...new Set(Object.keys(commands).map((name) => name.split(" ")[0]!))];
  if (!group || group.startsWith("-")) throw new UsageError("name a command");
  if (!groups.includes(group)) throw new UsageError(`unknown command '${group}'${suggestion(group, groups)}`);
  const subs = Object.keys(commands).filter((name) => name.startsWith(`${group} `)).map((name) => name.slice(group.length + 1));
  if (sub === "--help" || sub === "-h") throw new GroupHelp(group);
  if (!sub || sub.startsWith("-")) throw new UsageError(`'${group}' needs a sub-command: ${subs.join(", ")}`);
  if (!subs.includes(sub)) {
    const nearest = suggestion(sub, subs);
    throw new UsageError(`unknown command '${group} ${sub}'${nearest && nearest.replace(/'([^']*)'\?$/, `'${group} $1'?`)}`);
  }
  return `${group} ${sub}`;
}

/** The command's own options and operands; an option it does not take is named with the nearest it does. */
function parseCommandLine(name: string, argv: readonly string[]): Args {
  const command = commands[name]!;
  const accepted = [...command.options, ...COMMON];
  const options = Object.fromEntries(accepted.map((option) => [option, OPTIONS[option]]));
  // first without strictness, to name an unknown option together with the nearest known one
  const { tokens } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: false, tokens: true });
  const unknown = tokens.find((token) => token.kind === "option" && !accepted.includes(token.name as OptionName));
  if (unknown?.kind === "option") {
    const known = accepted.map((option) => `--${option}`);
    throw new UsageError(`unknown option '${unknown.rawName}' for '${name}'${suggestion(`--${unknown.name}`, known)}`, name);
  }
  const valueless = tokens.find((token) => token.kind === "option" && OPTIONS[token.name as OptionName].type === "string" && token.value === undefined);
  if (valueless?.kind === "option") throw new UsageError(`option '${valueless.rawName}' needs a value`, name);
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
    if (!values.help && positionals.length > (command.operands ?? 0)) {
      throw new UsageError(`unexpected argument '${positionals[command.operands ?? 0]}' for '${name}'`, name);
    }
    return new Args(values as Partial<Record<OptionName, string | boolean>>, positionals);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // node's own words for a missing value ("Option '--account <value>' argument missing")
    throw new UsageError((error as Error).message, name);
  }
}

/** A database that cannot be opened (unreachable, missing): its first line, not the driver's stack. */
function cannotOpen(error: unknown): never {
  const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
  throw new CommandFailed(`the database cannot be opened: ${message}`);
}

/** Opens what a command asks for, once, and closes the database afterwards. */
function lazyContext(): Context & { close(): Promise<void> } {
  let config: Promise<Config> | undefined;
  let database: Promise<Database> | undefined;
  const context = {
    config: () =>
      (config ??= import("../server/config.ts").then(({ loadOperatorConfig }) => loadOperatorConfig(process.env))),
    database: () =>
      (database ??= (async () => {
        const [{ openDatabaseChecked }, { database: settings }] = await Promise.all([import("../server/db/database.ts"), context.config()]);
        // a running service's embedded database is shared (it applied the migrations when it started)
        const db = await openDatabaseChecked(settings, { share: true, connections: 2 }).catch(cannotOpen);
        await db.migrate().catch(async (error: unknown) => {
          await db.close().catch(() => {});
          cannotOpen(error);
        });
        return db;
      })()),
    services: async () => {
      const [{ createServices }, db, config] = await Promise.all([import("../server/services/index.ts"), context.database(), context.config()]);
      return createServices(db.prisma, { config });
    },
    close: async () => {
      const opened = await database?.catch(() => undefined);
      await opened?.close();
    },
  };
  return context;
}

async function main(argv: readonly string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h") {
    (argv.length === 0 ? console.error : console.log)(usage());
    return argv.length === 0 ? 2 : 0;
  }
  let name: string | undefined;
  let args: Args;
  try {
    name = findCommand(argv);
    args = parseCommandLine(name, argv.slice(2));
  } catch (error) {
    if (error instanceof GroupHelp) {
      console.log(usage(undefined, error.group));
      return 0;
    }
    if (!(error instanceof UsageError)) throw error;
    console.error(`${error.message}\n${usage(error.command)}`);
    return 2;
  }
  if (args.flag("help")) {
    console.log(usage(name));
    return 0;
  }
  const context = lazyContext();
  try {
    await commands[name]!.run(args, context);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n${usage(name)}`);
      return 2;
    }
    if (error instanceof CommandFailed || error instanceof DomainError) {
      console.error(error.message); // an unknown account or dataset: one line, not a stack
      return 1;
    }
    throw error;
  } finally {
    await context.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
