// The ingest writer on its own: drains the ingest log (the queue table of DATABASE_URL or the
// embedded database; the JetStream stream of INGEST_LOG_URL when set) until SIGTERM/SIGINT. Run it beside collectors started with INGEST_WRITER=off, so that
// writing does not share the collectors' event loop:  npm run ingest
import { openDatabaseOrExit } from "../server/db/database.ts";
import { loadOperatorConfig } from "../server/config.ts";
import { createLogger } from "../server/logging.ts";
import { createServices } from "../server/services/index.ts";
import { startProcessParts } from "../server/runtime.ts";

const config = loadOperatorConfig(process.env);
const logger = createLogger(config.logLevel);
const { writer: settings } = config.tracking;
// beside a running service on the embedded database, its database is shared (as the operator CLI does)
const db = await openDatabaseOrExit(config.database, { share: true });
await db.migrate();
const services = createServices(db.prisma, { config, logger });
// wired as the service's own writer (segment entries and webhook events); the jobs they queue
// (alerts, deliveries) are run by the service's processes
// this process is the writer, whatever INGEST_WRITER says for the service's processes
const parts = await startProcessParts(db, services, { ...config, tracking: { writer: { ...settings, enabled: true } } }, logger).catch((error: Error) => {
  console.error(`configuration error: ${error.message}`);
  process.exit(1);
});
logger.info("ingest writer running", { log: parts.ingestLog.kind, batchSize: settings.batchSize, pollMs: settings.pollMs });

async function stop(signal: string): Promise<void> {
  logger.info("stopping", { signal });
  await parts.stop();
  await db.close();
  logger.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void stop("SIGTERM"));
process.on("SIGINT", () => void stop("SIGINT"));
