// config -> database (migrated) -> rate limiter -> app -> listen -> certificate worker -> demo
// account; SIGTERM drains. With WEB_CONCURRENCY > 1 the primary opens and migrates the database,
// forks the workers (server/cluster.ts) and prints the demo; each worker runs the rest.
import { createServer } from "node:net";
import { createApp } from "./app.ts";
import { clusterRole, startWorkers } from "./cluster.ts";
import { loadConfig } from "./config.ts";
import { openDatabaseOrExit } from "./db/database.ts";
import { demoWebsiteDataset, ensureDemo } from "./demo.ts";
import { listen } from "./listen.ts";
import { createLogger } from "./logging.ts";
import { createRateLimiter } from "./rate-limiter.ts";
import { resolveEncryptionKey } from "./security/secret-box.ts";
import { startDigestScheduler } from "./notify/segment-alerts.ts";
import { startRetentionScheduler } from "./jobs/retention.ts";
import { createServices } from "./services/index.ts";
import { sharedResolver } from "./tracking/resolver.ts";
import { openIngestLog } from "./tracking/ingest-log.ts";
import { startIngestWriter } from "./tracking/writer.ts";

const config = loadConfigOrExit();
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

// workers share the database their primary opened and migrated
if (role !== "worker") {
  logger.info("starting", {
    database: config.database.url ? "PostgreSQL (DATABASE_URL)" : `embedded, in ${config.database.dataDir} (the first start creates it: up to a minute)`,
  });
}
const db = await openDatabaseOrExit(config.database, { share: role === "worker" });
const applied = role === "worker" ? [] : await db.migrate();
if (role !== "worker") logger.info("database ready", { kind: db.kind, migrationsApplied: applied });

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
if (role === "single") logger.info("loading the IP-to-network data (a few seconds)");
sharedResolver({ ipv6Geo: config.tracking.ipv6Geo });
// The ingest log: the queue table, or the JetStream stream of INGEST_LOG_URL (unreachable: exit).
const ingestLog = await openIngestLog(db.prisma, config.ingestLog, logger, db.sql).catch((error: Error) => {
  console.error(`configuration error: ${error.message}`);
  process.exit(1);
});
if (config.ingestLog) logger.info("ingest log", { kind: ingestLog.kind, stream: config.ingestLog.stream, replicas: config.ingestLog.replicas });
// The writer's hooks (segment entries, webhook events) come with the services, as in `npm run ingest`.
const ingest = tracking.writer.enabled
  ? startIngestWriter(db.prisma, services.ingestWiring.deps, logger, { ...tracking.writer, ...services.ingestWiring.hooks, log: ingestLog })
  : undefined;
const app = createApp({
  db,
  services,
  logger,
  validateResponses: config.validateResponses,
  rateLimiter,
  limits: config.limits,
  requireHttps: config.requireHttps,
  trustProxy: config.trustProxy,
  tracking: { config: tracking, log: ingestLog, onQueued: ingest?.wake },
  demoDataset: config.seedDemo && !config.production ? () => demoWebsiteDataset(services) : undefined,
});
const running = await listen(app, config, logger);
if (!config.notify.publicUrl) publicUrl = baseUrl(running.port, running.protocol);
// Background jobs (certificates, mail, digests, webhooks, ...): picks up what a previous process
// left (a job whose lease ran out), in every process.
services.jobs.start();
const digests = startDigestScheduler(services.segmentAlerts, logger);
const retentionScheduler = startRetentionScheduler(services.retention, logger);
logger.info("mail transport", { destination: services.mailer.destination });
// declared before the handlers: a signal can arrive while the demo below is still being seeded
let stopping = false;
let seeding: Promise<void> | undefined;
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
if (config.seedDemo && role === "single") await (seeding = printDemo(baseUrl(running.port, running.protocol)));

function baseUrl(port: number, protocol: string): string {
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host;
  return `${protocol}://${host}:${port}`;
}

async function printDemo(baseUrl: string): Promise<void> {
  logger.info("preparing the demo account");
  const demo = await ensureDemo(services);
  // the demo website's form is tracked and enriched (a found profile costs a credit)
  await db.prisma.dataset.update({ where: { id: demo.datasetIds[0] }, data: { formTracking: true, contactEnrichment: true } });
  const [website] = demo.datasetIds;
  const key = `-H "x-api-key: ${demo.key}"`;
  // Shown on the console for the person who started the service, never through the logger.
  console.log(
    [
      "",
      `API reference: ${baseUrl}/docs (no key needed)`,
      `Mail (invitations, segment alerts) goes to: ${services.mailer.destination}`,
      "Demo account ready. A new demo key is issued at every start (the previous one is revoked).",
      `  account id:  ${demo.accountId}`,
      `  API key:     ${demo.key}`,
      `  admin:       ${demo.adminEmail}`,
      `  datasets:    ${demo.datasetIds.join(", ")} (the first is the demo website, with leads)`,
      `  contact:     ${demo.contactEmail}, last name ${demo.contactLastName} (its look-up finds a profile)`,
      "For the README's walkthrough, paste:",
      `  export B=${baseUrl} KEY=${demo.key} ACC=${demo.accountId} DS=${website} A=email=${demo.adminEmail} CONTACT=${demo.contactEmail} LAST=${demo.contactLastName}`,
      "Try it:",
      `  curl -s "${baseUrl}/v1/users?email=${demo.adminEmail}" ${key}`,
      `  curl -s "${baseUrl}/v1/user-datasets?accountId=${demo.accountId}&email=${demo.adminEmail}" ${key}`,
      "Look up a contact (costs 1 credit of the oldest demo dataset; an unknown address is free):",
      `  curl -s -X POST "${baseUrl}/v1/email-lookup" ${key} -H "content-type: application/json" -d '{"email":"${demo.contactEmail}","lastName":"${demo.contactLastName}"}'`,
      "Tracking: open the demo website, click to page 2, send the form, then list the leads (the visits count as Apple's network):",
      `  ${baseUrl}/demo?dataset=${website}`,
      `  curl -s "${baseUrl}/v1/leads?email=${demo.adminEmail}&datasetId=${website}&limit=3" ${key}`,
      "",
    ].join("\n"),
  );
}

/** Stop accepting, let in-flight requests finish (bounded), then release the limiter and the database. */
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info("stopping", { signal, timeoutMs: config.timeouts.shutdownMs });
  await running.shutdown();
  await seeding?.catch(() => {}); // the demo's statements finish before the database closes (its failure is reported where it is awaited)
  digests.stop();
  retentionScheduler.stop();
  await services.jobs.stop();
  services.mailer.close();
  await ingest?.stop();
  await ingestLog.close();
  await rateLimiter.close();
  await db.close();
  logger.info("stopped");
  process.exit(0);
}
