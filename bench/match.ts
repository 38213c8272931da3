// How well the service names the organisation behind each visit, in a simulated B2B traffic world
// with ground truth, driven from outside (POST /collect and the partner API only):
//   npm run bench:match [-- --seed 1 --orgs 200 --visits 15000 --days 30 --isps 4 --concurrency 4
//                          --drain-seconds 180 --settle-seconds 10]
// The world (bench/match/world.ts): organisations on their own AS; small companies on static
// lines in real ISPs' ranges (PTR names under their own domain, the ISP's generic names, or none;
// a quarter of them declared by the partner, half before the traffic and half halfway); coworking
// spaces; home-office workers and households on dynamic pools; consumers behind CGNAT, on mobile
// carriers and in clouds; forms at a few percent of sessions, with business or free-mail
// addresses; sessions in time order over the days, so that evidence often comes after an
// organisation's first visits. Its PTR names come from a DNS server on loopback
// (TRACKING_DNS_SERVERS). The service runs in production mode in its own process, on a fresh
// embedded database (a temporary directory, deleted afterwards) or on DATABASE_URL.
// Prints match rate, precision, consumer leak and knowable match (bench/match/evaluate.ts) with
// their numerators and denominators, a breakdown per kind of visitor, and the issue's targets
// with "met" or "MISSES". Exit 1 on a wrong count (an answer with another status than the
// documented one, a visit read back that was never sent or read twice, more attributed visits
// than sent, the writer not drained within --drain-seconds); a missed target alone is exit 0.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { ChildProcess } from "node:child_process";
import { loadConfig } from "../server/config.ts";
import { openDatabaseOrExit } from "../server/db/database.ts";
import { createServices } from "../server/services/index.ts";
import { serviceClient, type ServiceClient, WrongAnswer } from "./match/api.ts";
import { publishPtrNames, ptrQuestions, startWorldDns } from "./match/dns.ts";
import { drive, readBack, waitForDrain } from "./match/driver.ts";
import { evaluate } from "./match/evaluate.ts";
import { addressIn, candidates, loadNetworks, type Network, type Role } from "./match/networks.ts";
import { createRandom, subSeed } from "./match/random.ts";
import { count, describeEvaluation, describeWorld } from "./match/report.ts";
import { groundTruth } from "./match/truth.ts";
import { buildWorld, type SelectedNetworks } from "./match/world.ts";
import { freePort, startService, stopService } from "./service.ts";

/** No run may take longer than this, whatever the options say. */
const MAX_RUN_MINUTES = 30;

const { values } = parseArgs({
  options: {
    seed: { type: "string", default: "1" },
    orgs: { type: "string", default: "200" },
    visits: { type: "string", default: "15000" },
    days: { type: "string", default: "30" },
    isps: { type: "string", default: "4" },
    concurrency: { type: "string", default: "4" },
    "drain-seconds": { type: "string", default: "180" },
    "settle-seconds": { type: "string", default: "10" },
  },
});
const options = { seed: Number(values.seed), orgs: Number(values.orgs), visits: Number(values.visits), days: Number(values.days) };
const wantedIsps = Number(values.isps);
const concurrency = Math.max(1, Number(values.concurrency));
const [drainSeconds, settleSeconds] = [Number(values["drain-seconds"]), Number(values["settle-seconds"])];
for (const [name, value] of Object.entries({ ...options, isps: wantedIsps, drainSeconds, settleSeconds })) {
  if (!Number.isInteger(value) || value < (name === "seed" ? 0 : 1)) throw new Error(`--${name} must be a positive whole number`);
}

const EXPECTED_TYPE: Record<Role, string> = { business: "business", isp: "isp", mobile: "mobile", hosting: "hosting" };
const postgresUrl = process.env.DATABASE_URL || undefined;

interface Tenant {
  datasetId: string;
  key: string;
  email: string;
}

/** An account, a dataset and an API key on the database the service will open (it is not running yet). */
async function prepareTenant(dataDir: string | undefined): Promise<Tenant> {
  const db = await openDatabaseOrExit(postgresUrl ? { url: postgresUrl } : { dataDir });
  try {
    await db.migrate();
    const services = createServices(db.prisma, { config: loadConfig({}) });
    const email = `bench-match-${randomBytes(4).toString("hex")}@bench.example`;
    const { accountId } = await services.accounts.createAccount({ name: "Bench match", licenceDays: 1, admin: { email, name: "Bench" } });
    const datasetId = await services.datasets.create(accountId, email, { name: "B2B website", domain: "www.matchbench.example" });
    const { key } = await services.accounts.createApiKey(accountId, "bench-match");
    return { datasetId, key, email };
  } finally {
    await db.close(); // the embedded database: the service opens it next
  }
}

interface Selection<T> {
  kept: T[];
  checked: number;
  /** Candidates skipped, by the type the service gave them. */
  skipped: Map<string, number>;
}

/** The first `wanted` candidates of the role that the service types as the label says (one GET /v1/ip-lookup each). */
async function select(client: ServiceClient, all: Network[], role: Role, wanted: number, seed: number) {
  const random = createRandom(subSeed(seed, `networks ${role}`));
  const selection: Selection<{ network: Network; serviceName: string; serviceDomain: string | null }> = { kept: [], checked: 0, skipped: new Map() };
  for (const network of candidates(all, role, random)) {
    if (selection.kept.length >= wanted) break;
    const answer = await client.ipLookup(addressIn(network, random));
    selection.checked += 1;
    if (answer.networkType === EXPECTED_TYPE[role] && answer.organizationName) {
      selection.kept.push({ network, serviceName: answer.organizationName, serviceDomain: answer.organizationDomain });
    } else {
      selection.skipped.set(answer.networkType, (selection.skipped.get(answer.networkType) ?? 0) + 1);
    }
  }
  return selection;
}

function describeSelection(label: string, s: Selection<{ network: Network }>, named: boolean): string {
  const skipped = [...s.skipped].map(([type, n]) => `${n} typed ${type}`).join(", ");
  const names = named ? `: ${s.kept.map((k) => `${k.network.name} (AS${k.network.asn})`).join(", ")}` : "";
  return `  ${label}: ${s.kept.length} of ${s.checked} checked${skipped ? ` (skipped: ${skipped})` : ""}${names}`;
}

async function selectNetworks(client: ServiceClient, seed: number, ownAs: number): Promise<SelectedNetworks> {
  const all = loadNetworks();
  const business = await select(client, all, "business", ownAs, seed);
  const isps = await select(client, all, "isp", wantedIsps, seed);
  const mobiles = await select(client, all, "mobile", 2, seed);
  const clouds = await select(client, all, "hosting", 3, seed);
  console.log("networks from bench/classify-set.json, kept when GET /v1/ip-lookup types them as labelled:");
  console.log(describeSelection("own AS (business)", business, false));
  console.log(describeSelection("ISPs (isp)", isps, true));
  console.log(describeSelection("mobile carriers (mobile)", mobiles, true));
  console.log(describeSelection("clouds (hosting)", clouds, true));
  return { ownAs: business.kept, isps: isps.kept.map((k) => k.network), mobiles: mobiles.kept.map((k) => k.network), clouds: clouds.kept.map((k) => k.network) };
}

async function run(): Promise<number> {
  console.log(
    `bench:match  seed ${options.seed}  --orgs ${options.orgs} --visits ${options.visits} --days ${options.days} --isps ${wantedIsps}  ` +
      `database: ${postgresUrl ? "DATABASE_URL" : "embedded (temporary directory)"}`,
  );
  const temporary = postgresUrl ? undefined : mkdtempSync(path.join(os.tmpdir(), "bench-match-"));
  const dns = await startWorldDns();
  let service: ChildProcess | undefined;
  const watchdog = setTimeout(() => {
    console.error(`the benchmark took longer than ${MAX_RUN_MINUTES} minutes: stopped`);
    service?.kill("SIGKILL");
    process.exit(1);
  }, MAX_RUN_MINUTES * 60_000);
  watchdog.unref();
  try {
    const dataDir = temporary && path.join(temporary, "pglite");
    const tenant = await prepareTenant(dataDir);
    const port = await freePort();
    const started = Date.now();
    service = await startService(port, {
      ...(postgresUrl ? { DATABASE_URL: postgresUrl } : { DATABASE_URL: "", DATA_DIR: dataDir! }),
      CTD_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      REQUIRE_HTTPS: "false", // plain HTTP on loopback, as behind a TLS-terminating proxy
      TRUST_PROXY: "loopback", // the collector takes each visitor's address from X-Forwarded-For
      TRACKING_DNS_SERVERS: dns.address,
      RATE_LIMIT_REQUESTS: "1000000000",
      COLLECT_IP_REQUESTS_PER_MINUTE: "1000000000", // a CGNAT address carries many visitors
      COLLECT_DATASET_EVENTS_PER_MINUTE: "1000000000",
    });
    console.log(`service started in ${((Date.now() - started) / 1000).toFixed(1)} s; reverse DNS: the bench's server on ${dns.address}`);
    const client = serviceClient(`http://127.0.0.1:${port}`, tenant.key, tenant.email);

    const networks = await selectNetworks(client, options.seed, Math.round(options.orgs * 0.2));
    const world = buildWorld(options, networks);
    publishPtrNames(dns, world.ptr);
    for (const line of describeWorld(world)) console.log(line);

    await client.enableForms(tenant.datasetId);
    const sendStarted = Date.now();
    const sent = await drive(client, world, tenant.datasetId, concurrency);
    const sendSeconds = (Date.now() - sendStarted) / 1000;
    console.log(
      `sent: ${count(sent.requests)} POST /collect in ${sendSeconds.toFixed(1)} s, ${count(sent.events)} events; the collector queued ${count(sent.queued)} ` +
        `(the others it dropped, as its answers say)`,
    );
    if (world.declarations.length) {
      console.log(
        sent.declarationsSupported
          ? `declared networks: ${sent.declared} declared (POST /v1/declared-networks 201)`
          : `declared networks: not supported by this service (POST /v1/declared-networks answered ${sent.declarationStatus}); going on without them`,
      );
    }
    const drainStarted = Date.now();
    if (!(await waitForDrain(client, tenant.datasetId, drainSeconds, settleSeconds))) {
      console.error(`FAILED: the writer did not finish (or the leads did not settle) within ${drainSeconds} s`);
      return 1;
    }
    const leads = await readBack(client, tenant.datasetId);
    const readCount = leads.reduce((n, l) => n + l.visitUrls.length, 0);
    console.log(
      `drained and settled ${((Date.now() - drainStarted) / 1000).toFixed(1)} s after the last request; read back ${count(leads.length)} leads ` +
        `with ${count(readCount)} visits; the service asked the loopback DNS server ${count(ptrQuestions(dns))} PTR questions\n`,
    );

    const evaluation = evaluate(groundTruth(world, { declarations: sent.declarationsSupported === true }), world.orgs, leads);
    for (const line of describeEvaluation(evaluation)) console.log(line);
    // a visit read back was queued by the collector: the answers' counts bound what can be read
    if (readCount > sent.queued) evaluation.problems.push(`${count(readCount)} visits read back, more than the ${count(sent.queued)} events the collector queued`);
    if (evaluation.problems.length) {
      console.error(`\nFAILED (wrong counts):\n  ${evaluation.problems.join("\n  ")}`);
      return 1;
    }
    console.log("\ncounts consistent: every visit read back was sent and queued, none read twice");
    return 0;
  } catch (error) {
    if (!(error instanceof WrongAnswer)) throw error;
    console.error(`FAILED (wrong answer): ${error.message}`);
    return 1;
  } finally {
    clearTimeout(watchdog);
    if (service) await stopService(service);
    await dns.close();
    if (temporary) rmSync(temporary, { recursive: true, force: true });
  }
}

process.exitCode = await run();
