// config -> database (migrated) -> rate limiter -> app -> listen -> certificate worker -> demo
// account; SIGTERM drains.
import { createApp } from "./app.ts";
import { loadConfig } from "./config.ts";
import { loadTrackingDomainConfig, resolveEncryptionKey } from "./ctd/config.ts";
import { startCertificateWorker } from "./ctd/worker.ts";
import { openDatabaseOrExit } from "./db/database.ts";
import { ensureDemo } from "./demo.ts";
import { listen } from "./listen.ts";
import { createLogger } from "./logging.ts";
import { createRateLimiter } from "./rate-limiter.ts";
import { createServices } from "./services/index.ts";

const config = loadConfig();
const logger = createLogger(config.logLevel);
const trackingDomains = trackingDomainSettings();

/** Resolves the key now: production refuses to start without CTD_ENCRYPTION_KEY, development warns once. */
function trackingDomainSettings() {
  try {
    const settings = loadTrackingDomainConfig();
    return { ...settings, encryptionKey: resolveEncryptionKey(settings, logger) };
  } catch (error) {
    console.error(`configuration error: ${(error as Error).message}`);
    process.exit(1);
  }
}

const db = await openDatabaseOrExit(config.database);
const applied = await db.migrate();
logger.info("database ready", { kind: db.kind, migrationsApplied: applied });

const services = createServices(db.prisma, { trackingDomains, logger });
const rateLimiter = await createRateLimiter(config.rateLimit, logger);
const app = createApp({
  db,
  services,
  logger,
  validateResponses: config.validateResponses,
  rateLimiter,
  limits: config.limits,
  requireHttps: config.requireHttps,
  trustProxy: config.trustProxy,
});
const running = await listen(app, config, logger);
logger.info("listening", {
  protocol: running.protocol,
  host: config.host,
  port: running.port,
  rateLimit: { requests: config.rateLimit.requests, windowSeconds: config.rateLimit.windowSeconds, shared: !!config.rateLimit.redis },
  requireHttps: config.requireHttps,
});
// Picks up the certificate jobs a previous process left unfinished, then those that are queued.
const worker = startCertificateWorker(services.certificateJobs, trackingDomains.jobs, logger);
process.on("SIGTERM", () => void stop("SIGTERM"));
process.on("SIGINT", () => void stop("SIGINT"));
if (config.seedDemo) {
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host;
  await printDemo(`${running.protocol}://${host}:${running.port}`);
}

async function printDemo(baseUrl: string): Promise<void> {
  const demo = await ensureDemo(services);
  // Shown on the console for the person who started the service, never through the logger.
  console.log(
    [
      "",
      "Demo account ready. A new demo key is issued at every start (the previous one is revoked).",
      `  account id: ${demo.accountId}`,
      `  API key:    ${demo.key}`,
      "Try it:",
      `  curl -s "${baseUrl}/v1/user-datasets?accountId=${demo.accountId}&email=${demo.adminEmail}" -H "x-api-key: ${demo.key}"`,
      "Look up a contact (costs 1 credit of the oldest demo dataset; an unknown address is free):",
      `  curl -s -X POST "${baseUrl}/v1/email-lookup" -H "x-api-key: ${demo.key}" -H "content-type: application/json" -d '{"email":"${demo.contactEmail}"}'`,
      "",
    ].join("\n"),
  );
}

let stopping = false;
/** Stop accepting, let in-flight requests finish (bounded), then release the limiter and the database. */
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info("stopping", { signal, timeoutMs: config.timeouts.shutdownMs });
  await running.shutdown();
  await worker.stop();
  await rateLimiter.close();
  await db.close();
  logger.info("stopped");
  process.exit(0);
}
