// config -> database (migrated) -> demo account -> app -> listen -> certificate worker.
import { createApp } from "./app.ts";
import { loadConfig } from "./config.ts";
import { loadTrackingDomainConfig, resolveEncryptionKey } from "./ctd/config.ts";
import { startCertificateWorker } from "./ctd/worker.ts";
import { openDatabaseOrExit } from "./db/database.ts";
import { ensureDemo } from "./demo.ts";
import { createLogger } from "./logging.ts";
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
const app = createApp({ db, logger, validateResponses: config.validateResponses, services });
const server = app.listen(config.port, config.host, () => {
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  logger.info("listening", { host: config.host, port });
  if (config.seedDemo) void printDemo(`http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${port}`);
});
// Picks up the certificate jobs a previous process left unfinished, then those that are queued.
const worker = startCertificateWorker(services.certificateJobs, trackingDomains.jobs, logger);

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
      "",
    ].join("\n"),
  );
}

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info("stopping", { signal });
  server.close();
  server.closeIdleConnections();
  await worker.stop();
  await db.close();
  process.exit(0);
}
process.on("SIGTERM", () => void stop("SIGTERM"));
process.on("SIGINT", () => void stop("SIGINT"));
