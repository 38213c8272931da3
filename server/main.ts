// config -> (listen: /healthz, /readyz and /docs answer from here) -> database (migrated) and,
// meanwhile, the IP data's prepared form -> rate limiter -> app (takes over the port) -> certificate
// worker -> demo account; SIGTERM drains. With WEB_CONCURRENCY > 1 the primary opens and migrates
// the database, forks the workers (server/cluster.ts) and prints the demo; each worker runs the rest.
// Only what the first answer needs is imported statically: the rest (1 to 4 s of modules, more on
// a busy machine) loads while the port already answers.
import { fork } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { clusterRole, startWorkers } from "./cluster.ts";
import { loadConfig } from "./config.ts";
import { programModule } from "./paths.ts";
import { ensureWritable } from "./db/data-dir.ts";
import { probeDatabaseOrExit } from "./db/probe.ts";
import { BannerReminder, demoBanner, demoReminder } from "./demo-banner.ts";
import { type StartupProgress, startingApp } from "./http/starting.ts";
import { listen, type RunningServer } from "./listen.ts";
import { createLogger } from "./logging.ts";
import { resolveEncryptionKey } from "./security/secret-box.ts";
import { setIpDataCacheDir } from "./tracking/ipdata/asn-table.ts";
import { ipDataPrepared } from "./tracking/ipdata/ip-data-cache.ts";

const config = loadConfigOrExit();
if (config.database.dataDir) {
  try {
    ensureWritable(config.database.dataDir);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
const logger = createLogger(config.logLevel);
const trackingDomains = trackingDomainSettings();
/** An address of Apple's network (AS714, Cupertino): what the demo's visits resolve to. */
const DEMO_VISITOR_IP = "17.253.144.10";

/** The collector's settings; outside production the demo's browser on loopback counts as a business network. */
function trackingSettings() {
  const demo = config.seedDemo && !config.production;
  return demo ? { ...config.tracking, loopbackIp: config.tracking.loopbackIp ?? DEMO_VISITOR_IP } : config.tracking;
}

/** The only place the service reads its environment (through the schema of server/config.ts). */
function loadConfigOrExit() {
  try {
    return loadConfig(process.env);
  } catch (error) {
    console.error(`configuration error: ${(error as Error).message}`);
    process.exit(1);
  }
}

/** Resolves the key now (production has CTD_ENCRYPTION_KEY: server/config.ts requires it); a development key warns once. */
function trackingDomainSettings() {
  try {
    const settings = config.trackingDomains;
    return { ...settings, encryptionKey: resolveEncryptionKey(settings, logger) };
  } catch (error) {
    console.error(`configuration error: ${(error as Error).message}`);
    process.exit(1);
  }
}

const role = clusterRole(config.workers);

/** A port already in use is one clear line, before the database takes its time to start. */
async function exitIfPortTaken(): Promise<void> {
  const probe = createServer();
  const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    probe.once("error", resolve);
    probe.listen(config.port, config.host, () => probe.close(() => resolve(undefined)));
  });
  if (error?.code !== "EADDRINUSE") return;
  console.error(`port ${config.port} on ${config.host} is in use: stop what runs there, or choose another port with PORT=`);
  process.exit(1);
}
if (role !== "worker") await exitIfPortTaken(); // workers share their primary's port

// What /readyz reports while the service starts (and after: the demo is seeded after "listening").
const progress: StartupProgress = {
  database: false,
  ipData: false,
  ...(config.seedDemo && role === "single" ? { demo: false } : {}),
  step: "opening the database",
};
/** Set by the first signal once the service runs (the demo's seed stops retrying). */
let stopping = false;
/** The demo banner's last lines again, below the first request logs (server/demo-banner.ts). */
const reminder = new BannerReminder((text) => console.log(text));
/** The port answers from here (one process alone): the app takes over once it is made. */
let handler: (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => void = startingApp(progress);
const early: RunningServer | undefined =
  role === "single"
    ? await listen((req, res) => handler(req, res), config, logger).catch((error: Error) => {
        console.error(`cannot listen on ${config.host}:${config.port}: ${error.message}`);
        process.exit(1);
      })
    : undefined;
// workers share the database their primary opened and migrated
if (role !== "worker") {
  logger.info("starting", {
    database: config.database.url ? "PostgreSQL (DATABASE_URL)" : `embedded, in ${config.database.dataDir} (the first start creates it: up to a minute)`,
    ...(early ? { port: early.port, answering: "/healthz, /readyz and /docs while the service starts" } : {}),
  });
}
// A signal before the start has finished ends the process at once (its 'exit' stops the IP data's
// process; the database's process closes when it sees this one gone); from "listening" on, it drains.
const stopWhileStarting = (signal: NodeJS.Signals) => {
  logger.info("stopped before the start finished", { signal });
  process.exit(signal === "SIGINT" ? 130 : 143);
};
if (role === "single") {
  process.on("SIGTERM", stopWhileStarting);
  process.on("SIGINT", stopWhileStarting);
}
// A PostgreSQL server that refuses or lacks the database is said now, before the service's modules
// load (a minute on a busy machine); the embedded database's own problems come when it opens.
if (role !== "worker") await probeDatabaseOrExit(config.database);
setIpDataCacheDir(config.tracking.ipDataCacheDir);
const ipDataReady = role === "primary" ? Promise.resolve() : prepareIpData();
const modules = importServiceModules();
const { openDatabaseOrExit } = await import("./db/database.ts");
const db = await openDatabaseOrExit(config.database, { share: role === "worker" });
const applied =
  role === "worker"
    ? []
    : await db.migrate().catch((error: Error) => {
        console.error(`the database's migrations failed: ${error.message.split("\n")[0]}: check the database (npm run migrate:check), or restore it from a backup`);
        process.exit(1);
      });
if (role !== "worker") logger.info("database ready", { kind: db.kind, migrationsApplied: applied });
progress.database = true;
const { createApp, createServices, createRateLimiter, demoWebsiteDataset, ensureDemo, sharedResolver, startProcessParts, throughWaits } = await modules;

// Links in mail point at PUBLIC_BASE_URL, or at the address this process listens on (known after listen).
let publicUrl = config.notify.publicUrl ?? config.notify.fallbackUrl;
const services = createServices(db.prisma, {
  config: { ...config, trackingDomains },
  logger,
  sql: db.sql,
  listeningUrl: () => publicUrl,
});
if (role === "primary") {
  const workers = await startWorkers({ count: config.workers, sharedRateLimit: !!config.rateLimit.redis, logger }).catch((error: Error) => {
    logger.error("workers did not start", { error: error.message });
    process.exit(1);
  });
  logger.info("workers listening", { workers: config.workers, port: workers.port });
  if (config.seedDemo) await printDemo(baseUrl(workers.port, config.tls ? "https" : "http"));
  await workers.stopped;
  await db.close();
  logger.info("stopped");
  process.exit(0);
}
const rateLimiter = await createRateLimiter(config.rateLimit, logger);
// Tracking: the resolution data loads before the first request needs it; the ingest writer
// drains the collector's queue (and whatever a previous process left in it).
const tracking = trackingSettings();
progress.step = "loading the IP-to-network data";
await ipDataReady;
const loadingStarted = performance.now();
sharedResolver({ ipv6Geo: config.tracking.ipv6Geo });
progress.ipData = true;
progress.step = "starting the API";
if (role === "single") logger.info("IP-to-network data loaded", { seconds: Math.round((performance.now() - loadingStarted) / 100) / 10 });
// The ingest log (the queue table, or the JetStream stream of INGEST_LOG_URL: unreachable, exit)
// and this process's writer, as in `npm run ingest` (server/runtime.ts).
const parts = await startProcessParts(db, services, config, logger).catch((error: Error) => {
  console.error(`configuration error: ${error.message}`);
  process.exit(1);
});
const app = createApp({
  db,
  services,
  logger,
  validateResponses: config.validateResponses,
  rateLimiter,
  limits: config.limits,
  requireHttps: config.requireHttps,
  trustProxy: config.trustProxy,
  tracking: { config: tracking, log: parts.ingestLog, onQueued: parts.writer?.wake },
  demoDataset: config.seedDemo && !config.production ? () => demoWebsiteDataset(services) : undefined,
  startup: progress,
});
let running: RunningServer;
if (early) {
  handler = (req, res) => {
    reminder.requested(req.url);
    app(req, res);
  };
  running = early;
} else running = await listen(app, config, logger);
if (!config.notify.publicUrl) publicUrl = baseUrl(running.port, running.protocol);
// Background jobs (certificates, mail, digests, webhooks, retention, ...)
parts.startJobs();
logger.info("mail transport", { destination: services.mailer.destination });
// declared before the handlers: a signal can arrive while the demo below is still being seeded
let seeding: Promise<void> | undefined;
process.off("SIGTERM", stopWhileStarting);
process.off("SIGINT", stopWhileStarting);
process.on("SIGTERM", () => void stop("SIGTERM"));
process.on("SIGINT", () => void stop("SIGINT"));
// "listening" is what operators and tests wait for: from here a signal stops the process gracefully
logger.info("listening", {
  protocol: running.protocol,
  host: config.host,
  port: running.port,
  rateLimit: { requests: config.rateLimit.requests, windowSeconds: config.rateLimit.windowSeconds, shared: !!config.rateLimit.redis },
  requireHttps: config.requireHttps,
});
if (config.seedDemo && role === "single") {
  progress.step = "preparing the demo account";
  await (seeding = printDemo(baseUrl(running.port, running.protocol)));
  progress.demo = true;
}

/** The modules of everything but the first answer, loaded while the database opens. */
async function importServiceModules() {
  const [app, services, rateLimiter, demo, resolver, runtime, waits] = await Promise.all([
    import("./app.ts"),
    import("./services/index.ts"),
    import("./rate-limiter.ts"),
    import("./demo.ts"),
    import("./tracking/ipdata/resolver.ts"),
    import("./runtime.ts"),
    import("./db/waits.ts"),
  ]);
  return {
    createApp: app.createApp,
    createServices: services.createServices,
    createRateLimiter: rateLimiter.createRateLimiter,
    demoWebsiteDataset: demo.demoWebsiteDataset,
    ensureDemo: demo.ensureDemo,
    sharedResolver: resolver.sharedResolver,
    startProcessParts: runtime.startProcessParts,
    throughWaits: waits.throughWaits,
  };
}

/**
 * A first start (per version of the data packages) prepares the IP data's cached forms in a
 * process of its own, beside the database's start, so that this process keeps answering; later
 * starts read them (well under a second). Should it fail, the resolver computes them here.
 */
async function prepareIpData(): Promise<void> {
  if (ipDataPrepared()) return;
  logger.info("preparing the IP-to-network data (once per data version: 10 to 30 s, beside the database's start)");
  const script = programModule(import.meta.url, "./tracking/ipdata/prepare-ip-data");
  const child = fork(script.file, config.tracking.ipDataCacheDir ? [config.tracking.ipDataCacheDir] : [], { execArgv: script.execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const stopChild = () => child.kill();
  process.on("exit", stopChild); // a start that fails meanwhile leaves nothing running
  await once(child, "exit").catch(() => {}); // not started: the resolver prepares the data here
  process.off("exit", stopChild);
}

function baseUrl(port: number, protocol: string): string {
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host;
  return `${protocol}://${host}:${port}`;
}

async function printDemo(baseUrl: string): Promise<void> {
  logger.info("preparing the demo account");
  // The seed starts over cleanly (server/demo.ts); a database slow to answer on a busy machine's
  // first start is waited for, not the end of the process.
  const demo = await throughWaits(() => ensureDemo(services), {
    logger,
    what: "preparing the demo account",
    boundMs: 10 * 60_000,
    giveUp: () => stopping,
  });
  // Shown on the console for the person who started the service, never through the logger.
  console.log(demoBanner(baseUrl, demo, services.mailer.destination));
  reminder.arm(demoReminder(baseUrl, demo));
}

/** Stop accepting, let in-flight requests finish (bounded), then release the limiter and the database. */
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  reminder.cancel();
  logger.info("stopping", { signal, timeoutMs: config.timeouts.shutdownMs });
  await running.shutdown();
  await seeding?.catch(() => {}); // the demo's statements finish before the database closes (its failure is reported where it is awaited)
  await parts.stop();
  services.mailer.close();
  await rateLimiter.close();
  await db.close();
  logger.info("stopped");
  process.exit(0);
}
