// A running app on a fresh database, plus what every test file needs around it.
import { appendFileSync } from "node:fs";
import path from "node:path";
import supertest from "supertest";
import { createApp } from "../../server/app.ts";
import { loadTrackingDomainConfig, type TrackingDomainConfig } from "../../server/ctd/config.ts";
import { newEncryptionKey } from "../../server/ctd/secret-box.ts";
import { createLogger, type Logger } from "../../server/logging.ts";
import { createServices, type Services } from "../../server/services/index.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";

export interface TestApi {
  db: TestDatabase;
  app: ReturnType<typeof createApp>;
  services: Services;
  /** supertest against the app, with the key of `tenant` unless another is given. */
  request: () => supertest.Agent;
  /** Every log line the app wrote. */
  logs: string[];
  /** The logger that writes them (for the certificate worker a test starts). */
  logger: Logger;
  close(): Promise<void>;
}

/** Where the run's report material goes (set by test/support/global-setup.ts). */
const reportDir = process.env.CONTRACT_REPORT_DIR;

function record(file: string, line: string): void {
  if (reportDir) appendFileSync(path.join(reportDir, `${file}-${process.pid}.log`), line + "\n");
}

export interface TestApiOptions {
  /** Custom tracking domains (resolvers, ACME server, ...); hermetic defaults when absent. */
  trackingDomains?: TrackingDomainConfig;
}

/**
 * Custom tracking domains for tests that do not care about them: DNS goes to a closed loopback
 * port (look-ups fail at once instead of asking the network), and add/update wait one second.
 */
function hermeticTrackingDomains(): TrackingDomainConfig {
  return loadTrackingDomainConfig({
    CTD_DNS_SERVERS: "127.0.0.1:9",
    CTD_ADD_WAIT_SECONDS: "1",
    CTD_ENCRYPTION_KEY: newEncryptionKey().toString("hex"),
  });
}

export async function startTestApi({ trackingDomains }: TestApiOptions = {}): Promise<TestApi> {
  const db = await createTestDatabase();
  const logs: string[] = [];
  const logger = createLogger("info", (line) => {
    logs.push(line);
    record("logs", line);
  });
  const services = createServices(db.prisma, { logger, trackingDomains: trackingDomains ?? hermeticTrackingDomains() });
  const app = createApp({
    db,
    logger,
    validateResponses: true,
    observe: (operationId, status) => record("coverage", `${operationId ?? "-"} ${status}`),
    services,
  });
  return {
    db,
    app,
    services,
    request: () => supertest.agent(app),
    logs,
    logger,
    close: () => db.close(),
  };
}
