// config -> database (migrated) -> demo account -> app -> listen.
import { createApp } from "./app.ts";
import { loadConfig } from "./config.ts";
import { openDatabaseOrExit } from "./db/database.ts";
import { ensureDemo } from "./demo.ts";
import { createLogger } from "./logging.ts";
import { createServices } from "./services/index.ts";

const config = loadConfig();
const logger = createLogger(config.logLevel);

const db = await openDatabaseOrExit(config.database);
const applied = await db.migrate();
logger.info("database ready", { kind: db.kind, migrationsApplied: applied });

const app = createApp({ db, logger, validateResponses: config.validateResponses });
const server = app.listen(config.port, config.host, () => {
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  logger.info("listening", { host: config.host, port });
  if (config.seedDemo) void printDemo(`http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${port}`);
});

async function printDemo(baseUrl: string): Promise<void> {
  const demo = await ensureDemo(createServices(db.prisma));
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
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info("stopping", { signal });
  server.close();
  server.closeIdleConnections();
  await db.close();
  process.exit(0);
}
process.on("SIGTERM", () => void stop("SIGTERM"));
process.on("SIGINT", () => void stop("SIGINT"));
