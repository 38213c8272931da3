// How well the service names the organisation behind each visit, in simulated B2B traffic worlds
// with ground truth, driven from outside (POST /collect and the partner API only):
//   npm run bench:match [-- --seeds 1-10 --mixes v4,v6half --quick --partners 1 --orgs 80 --visits 3000
//                          --days 20 --isps 4 --concurrency 4 --drain-seconds 180 --settle-seconds 5]
// One run per seed and mix (--quick: the first seed only), each on a service and database of its
// own (embedded: a temporary directory; DATABASE_URL: a new database on that server; both deleted
// afterwards), so that no run shares the service's caches or what it learns across accounts with
// another world; --partners N: the measured partner and N-1 others whose websites the same people
// visit, each an account of its own (their traffic is not measured; what the service learns
// across accounts from it is). The world (bench/match/world.ts): organisations on their own AS; small
// companies on access operators' static lines, named under their own domain, by the operator (a
// customer or line number under a brand zone, the address, or exactly like its household lines) or
// not at all; hosts (coworking spaces, serviced offices, hotels) whose gateway names the host for
// every tenant or guest; home workers with business e-mail on household lines, whose old address
// goes to the next subscriber; households, CGNAT, phones and clouds; the partner's declared
// networks, one of them a household pool; mix `v6half`: dual-stack sites (a /48, PTR only on the
// gateways), households (a /56, privacy addresses) and phones, about half the page views on IPv6.
// Its PTR names come from a DNS server on loopback (TRACKING_DNS_SERVERS). Prints per run the
// breakdown per kind of visitor and the figures without declarations (headline), the declared
// networks' line, and at the end each run's line and the minimum over the runs (the leak's
// maximum) with the targets' verdicts. The world's days reach the service as its receive time
// (X-Request-Start from the trusted proxy, TRACKING_RECEIVED_AT_HEADER): day 0 begins at the UTC
// midnight `--days` days (or a little more) before the run, so its last day has passed. Exit 1 on
// a wrong count (an answer with another status than the documented one, a visit read back that was
// never sent or read twice, more visits read back than queued, the writer not drained within
// --drain-seconds); a missed target alone is exit 0.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { ChildProcess } from "node:child_process";
import { loadConfig } from "../server/config.ts";
import { openDatabaseOrExit } from "../server/db/database.ts";
import { createServices } from "../server/services/index.ts";
import { v6Text } from "./match/addresses.ts";
import { serviceClient, type ServiceClient, WrongAnswer } from "./match/api.ts";
import { publishPtrNames, ptrQuestions, startWorldDns, type WorldDns } from "./match/dns.ts";
import { drive, readBack, waitForDrain } from "./match/driver.ts";
import { declared, evaluate, undeclared } from "./match/evaluate.ts";
import { addressIn, candidates, loadNetworks, type Network, type Role, slash48Count } from "./match/networks.ts";
import { createRandom, subSeed } from "./match/random.ts";
import { count, describeDeclared, describeEvaluation, describeFamilies, describeRuns, describeWorld, type RunResult } from "./match/report.ts";
import { groundTruth } from "./match/truth.ts";
import { buildWorld, type Mix, MIXES, type SelectedNetworks } from "./match/world.ts";
import { freePort, startService, stopService } from "./service.ts";
import { scratchDatabase } from "../test/support/database.ts";
import * as datasets from "../server/services/datasets.ts";
import * as accounts from "../server/services/accounts.ts";

/** No run (one seed and mix) may take longer than this, whatever the options say. */
const MAX_RUN_MINUTES = 15;

const { values } = parseArgs({
  options: {
    seeds: { type: "string", default: "1-10" },
    mixes: { type: "string", default: MIXES.join(",") },
    quick: { type: "boolean", default: false },
    partners: { type: "string", default: "1" },
    orgs: { type: "string", default: "80" },
    visits: { type: "string", default: "3000" },
    days: { type: "string", default: "20" },
    isps: { type: "string", default: "4" },
    concurrency: { type: "string", default: "4" },
    "drain-seconds": { type: "string", default: "180" },
    "settle-seconds": { type: "string", default: "5" },
  },
});

/** `1-5` or `1,3,7`: the seeds, in order. */
function parseSeeds(text: string): number[] {
  const range = /^(\d+)-(\d+)$/.exec(text);
  const seeds = range ? Array.from({ length: Math.max(0, Number(range[2]) - Number(range[1]) + 1) }, (_, i) => Number(range[1]) + i) : text.split(",").map(Number);
  if (!seeds.length || seeds.some((s) => !Number.isInteger(s) || s < 0)) throw new Error("--seeds: a range like 1-5 or a list like 1,2,3 of whole numbers");
  return values.quick ? seeds.slice(0, 1) : seeds;
}
const seeds = parseSeeds(values.seeds!);
const mixes = values.mixes!.split(",") as Mix[];
if (!mixes.length || mixes.some((m) => !MIXES.includes(m))) throw new Error(`--mixes: a list of ${MIXES.join(", ")}`);
const size = { orgs: Number(values.orgs), visits: Number(values.visits), days: Number(values.days), partners: Number(values.partners) };
const wantedIsps = Number(values.isps);
const concurrency = Math.max(1, Number(values.concurrency));
const [drainSeconds, settleSeconds] = [Number(values["drain-seconds"]), Number(values["settle-seconds"])];
for (const [name, value] of Object.entries({ ...size, isps: wantedIsps, drainSeconds, settleSeconds })) {
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive whole number`);
}
/** The service takes receive times of the last 30 days (TRACKING_PENDING_DAYS), and day 0 begins up to a day before `--days` ago. */
const MAX_DAYS = 28;
if (size.days > MAX_DAYS) throw new Error(`--days: at most ${MAX_DAYS}, or the first days' batches would take the service's own time`);

/** An access operator or carrier gives the world IPv6 only with this many /48s: a business /48 per customer, households' /56s, phones' /64s. */
const MIN_OPERATOR_SLASH48S = 1024;

const EXPECTED_TYPE: Record<Role, string> = { business: "business", isp: "isp", mobile: "mobile", hosting: "hosting" };
const postgresUrl = process.env.DATABASE_URL || undefined;

interface Tenant {
  datasetId: string;
  key: string;
  email: string;
}

/** `count` accounts, each with a dataset and an API key, on the database the service will open (it is not running yet). */
async function prepareTenants(url: string | undefined, dataDir: string | undefined, count: number): Promise<Tenant[]> {
  const db = await openDatabaseOrExit(url ? { url } : { dataDir });
  try {
    await db.migrate();
    const services = createServices(db.prisma, { config: loadConfig({}) });
    const tenants: Tenant[] = [];
    for (let i = 0; i < count; i++) {
      const email = `bench-match-${randomBytes(4).toString("hex")}@bench.example`;
      const { accountId } = await accounts.createAccount(services, { name: `Bench match ${i + 1}`, licenceDays: 1, admin: { email, name: "Bench" } });
      const datasetId = await datasets.create(services, accountId, email, { name: "B2B website", domain: "www.matchbench.example" });
      const { key } = await accounts.createApiKey(services, accountId, "bench-match");
      tenants.push({ datasetId, key, email });
    }
    return tenants;
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

/** An address of the network's first IPv6 range, for the type check. */
const v6AddressIn = (network: Network) => v6Text(network.ranges6[0]![0] + 0x1234n);

/**
 * The first `wanted` candidates of the role that the service types as the label says (one GET
 * /v1/ip-lookup each, a second for IPv6 in the v6half mix: an AS whose IPv6 is typed otherwise
 * keeps only its IPv4; ISPs and carriers must have both, so they are tried with IPv6 first).
 */
async function select(client: ServiceClient, all: Network[], role: Role, wanted: number, seed: number, mix: Mix) {
  const random = createRandom(subSeed(seed, `networks ${role}`));
  const selection: Selection<{ network: Network; serviceName: string; serviceDomain: string | null }> = { kept: [], checked: 0, skipped: new Map() };
  const needsV6 = mix === "v6half" && (role === "isp" || role === "mobile");
  const hasV6 = (n: Network) => slash48Count(n) >= MIN_OPERATOR_SLASH48S;
  const ordered = candidates(all, role, random).sort((a, b) => (needsV6 ? Number(!hasV6(a)) - Number(!hasV6(b)) : 0));
  for (const candidate of ordered) {
    if (selection.kept.length >= wanted) break;
    const answer = await client.ipLookup(addressIn(candidate, random));
    selection.checked += 1;
    if (answer.networkType !== EXPECTED_TYPE[role] || !answer.organizationName) {
      selection.skipped.set(answer.networkType, (selection.skipped.get(answer.networkType) ?? 0) + 1);
      continue;
    }
    const v6Typed = mix === "v6half" && candidate.ranges6.length > 0 && (!needsV6 || hasV6(candidate)) && (await client.ipLookup(v6AddressIn(candidate))).networkType === EXPECTED_TYPE[role];
    const network = v6Typed ? candidate : { ...candidate, ranges6: [] };
    selection.kept.push({ network, serviceName: answer.organizationName, serviceDomain: answer.organizationDomain });
  }
  return selection;
}

function describeSelection(label: string, s: Selection<{ network: Network }>, named: boolean): string {
  const skipped = [...s.skipped].map(([type, n]) => `${n} typed ${type}`).join(", ");
  const names = named ? `: ${s.kept.map((k) => `${k.network.name} (AS${k.network.asn}${k.network.ranges6.length ? ", IPv6" : ""})`).join(", ")}` : "";
  return `  ${label}: ${s.kept.length} of ${s.checked} checked${skipped ? ` (skipped: ${skipped})` : ""}${names}`;
}

async function selectNetworks(client: ServiceClient, all: Network[], seed: number, mix: Mix, ownAs: number): Promise<SelectedNetworks> {
  const business = await select(client, all, "business", ownAs, seed, mix);
  const isps = await select(client, all, "isp", wantedIsps, seed, mix);
  const mobiles = await select(client, all, "mobile", 2, seed, mix);
  const clouds = await select(client, all, "hosting", 3, seed, mix);
  console.log("networks from bench/classify-set.json, kept when GET /v1/ip-lookup types them as labelled:");
  console.log(describeSelection("own AS (business)", business, false));
  console.log(describeSelection("access operators (isp)", isps, true));
  console.log(describeSelection("mobile carriers (mobile)", mobiles, true));
  console.log(describeSelection("clouds (hosting)", clouds, true));
  return { ownAs: business.kept, isps: isps.kept.map((k) => k.network), mobiles: mobiles.kept.map((k) => k.network), clouds: clouds.kept.map((k) => k.network) };
}

interface Running {
  service: ChildProcess;
  baseUrl: string;
  tenants: Tenant[];
  /** The embedded database's temporary directory (deleted when the service stops). */
  temporary?: string;
  /** Drops the run's database on the DATABASE_URL server. */
  dropDatabase?: () => Promise<void>;
}

/** Starts the service on a fresh database (embedded: a new temporary directory; DATABASE_URL: a new database on that server) with `tenants` accounts. */
async function startWithTenants(dns: WorldDns, tenants: number): Promise<Running> {
  const started = Date.now();
  const temporary = postgresUrl ? undefined : mkdtempSync(path.join(os.tmpdir(), "bench-match-"));
  const dataDir = temporary && path.join(temporary, "pglite");
  const scratch = postgresUrl ? await scratchDatabase(postgresUrl, `bench_match_${Date.now()}_${randomBytes(3).toString("hex")}`) : undefined;
  const prepared = await prepareTenants(scratch?.url, dataDir, tenants);
  const port = await freePort();
  const service = await startService(port, {
    ...(scratch ? { DATABASE_URL: scratch.url } : { DATABASE_URL: "", DATA_DIR: dataDir! }),
    CTD_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    REQUIRE_HTTPS: "false", // plain HTTP on loopback, as behind a TLS-terminating proxy
    TRUST_PROXY: "loopback", // the collector takes each visitor's address from X-Forwarded-For
    TRACKING_RECEIVED_AT_HEADER: "x-request-start", // and each batch's time in the world (bench/match/driver.ts)
    TRACKING_DNS_SERVERS: dns.address,
    // each run's world gives the same real addresses PTR names of its own (publishPtrNames replaces
    // the last world's): the service's day-long answer cache would read a world with an earlier
    // world's names, which no network does within its own life (seed 5 v6half: all 42 wrong visits)
    TRACKING_DNS_CACHE_SECONDS: "1",
    RATE_LIMIT_REQUESTS: "1000000000",
    COLLECT_IP_REQUESTS_PER_MINUTE: "1000000000", // a CGNAT address carries many visitors
    COLLECT_DATASET_EVENTS_PER_MINUTE: "1000000000",
  });
  console.log(`service started with ${tenants} account${tenants === 1 ? "" : "s"} in ${((Date.now() - started) / 1000).toFixed(1)} s; reverse DNS: the bench's server on ${dns.address}`);
  return { service, baseUrl: `http://127.0.0.1:${port}`, tenants: prepared, temporary, dropDatabase: scratch?.drop };
}

async function stop(running: Running): Promise<void> {
  await stopService(running.service);
  if (running.temporary) rmSync(running.temporary, { recursive: true, force: true });
  await running.dropDatabase?.();
}

/** One seed and mix: a fresh service, the world driven through it, its figures; undefined when the run failed (printed). */
async function runOnce(dns: WorldDns, networks: Network[], running: Running, seed: number, mix: Mix): Promise<RunResult | undefined> {
  console.log(`\n=== bench:match  seed ${seed}  mix ${mix}  --orgs ${size.orgs} --visits ${size.visits} --days ${size.days} --isps ${wantedIsps} --partners ${size.partners}  ` +
    `database: ${postgresUrl ? "a new database on DATABASE_URL's server" : "embedded (temporary directory)"}`);
  const started = Date.now();
  const tenant = running.tenants[0]!;
  const client = serviceClient(running.baseUrl, tenant.key, tenant.email);
  try {
    const options = { ...size, seed, mix };
    const world = buildWorld(options, await selectNetworks(client, networks, seed, mix, Math.round(size.orgs * 0.2)));
    publishPtrNames(dns, world.ptr);
    for (const line of describeWorld(world)) console.log(line);

    for (const t of running.tenants) await serviceClient(running.baseUrl, t.key, t.email).enableForms(t.datasetId);
    const sent = await drive(client, world, running.tenants.map((t) => t.datasetId), concurrency);
    console.log(`sent: ${count(sent.requests)} POST /collect, ${count(sent.events)} events; the collector queued ${count(sent.queued)}; ` +
      (sent.declarationsSupported ? `${sent.declared} networks declared` : `declared networks not supported (${sent.declarationStatus}): going on without them`));
    if (!(await waitForDrain(client, tenant.datasetId, drainSeconds, settleSeconds))) {
      console.error(`FAILED: the writer did not finish (or the leads did not settle) within ${drainSeconds} s`);
      return undefined;
    }
    const leads = await readBack(client, tenant.datasetId);
    const readCount = leads.reduce((n, l) => n + l.visitUrls.length, 0);
    console.log(`read back ${count(leads.length)} leads with ${count(readCount)} visits; ${count(ptrQuestions(dns))} PTR questions asked\n`);

    const truths = groundTruth(world, { declarations: sent.declarationsSupported === true });
    const headline = evaluate(truths, world.orgs, leads, undeclared);
    for (const line of describeEvaluation(headline)) console.log(line);
    const result: RunResult = {
      seed, mix, seconds: (Date.now() - started) / 1000, views: world.visits.length, v6Views: world.visits.filter((v) => v.family === 6).length, headline,
      declared: evaluate(truths, world.orgs, leads, declared),
      ipv4: evaluate(truths, world.orgs, leads, (t) => undeclared(t) && t.family === 4),
      ipv6: evaluate(truths, world.orgs, leads, (t) => undeclared(t) && t.family === 6),
    };
    console.log(`\n${describeDeclared(result.declared)}\n${describeFamilies(result)}`);
    // a visit read back was queued by the collector: the answers' counts bound what can be read
    if (readCount > sent.queued) headline.problems.push(`${count(readCount)} visits read back, more than the ${count(sent.queued)} events the collector queued`);
    if (headline.problems.length) {
      console.error(`\nFAILED (wrong counts):\n  ${headline.problems.join("\n  ")}`);
      return undefined;
    }
    console.log(`counts consistent: every visit read back was sent and queued, none read twice (${result.seconds.toFixed(0)} s)`);
    return result;
  } catch (error) {
    if (!(error instanceof WrongAnswer)) throw error;
    console.error(`FAILED (wrong answer): ${error.message}`);
    return undefined;
  }
}

/** Every seed and mix in turn, each on a service and database of its own; exit code 1 at the first failed run. */
async function main(): Promise<number> {
  const started = Date.now();
  // read once, before any service runs (a few seconds: the IPv6 ranges are parsed from the CSV)
  const networks = loadNetworks();
  const dns = await startWorldDns();
  const runs = seeds.flatMap((seed) => mixes.map((mix) => ({ seed, mix })));
  const results: RunResult[] = [];
  try {
    for (const { seed, mix } of runs) {
      const running = await startWithTenants(dns, size.partners);
      const watchdog = setTimeout(() => {
        console.error(`a run took longer than ${MAX_RUN_MINUTES} minutes: stopped`);
        running.service.kill("SIGKILL");
        process.exit(1);
      }, MAX_RUN_MINUTES * 60_000);
      watchdog.unref();
      const result = await runOnce(dns, networks, running, seed, mix).finally(() => {
        clearTimeout(watchdog);
        return stop(running);
      });
      if (!result) return 1;
      results.push(result);
    }
  } finally {
    await dns.close();
  }
  console.log(`\n=== ${results.length} runs (seeds ${seeds.join(", ")}; mixes ${mixes.join(", ")}; ${size.partners} partner${size.partners === 1 ? "" : "s"} per world) ` +
    `in ${((Date.now() - started) / 60_000).toFixed(1)} min`);
  for (const line of describeRuns(results)) console.log(line);
  return 0;
}

process.exitCode = await main();
