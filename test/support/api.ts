// A running app on a fresh database, plus what every test file needs around it.
import { appendFileSync } from "node:fs";
import path from "node:path";
import type { Server } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import supertest from "supertest";
import { type AppOptions, createApp } from "../../server/app.ts";
import type { Config, MailConfig, NotifyConfig, RetentionConfig, ReverseDnsConfig, TrackingDomainConfig, WebhookConfig } from "../../server/config.ts";
import { createLogger, type Logger } from "../../server/logging.ts";
import { memoryRateLimiter } from "../../server/rate-limiter.ts";
import { createServices, type Services } from "../../server/services/index.ts";
import { assertDnsOnMachine, testConfig } from "./config.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";

export type TestAppOptions = Omit<AppOptions, "db" | "logger" | "observe" | "validateResponses" | "services"> & { services?: Services };

export interface TestApiOptions extends TestAppOptions {
  /** The whole configuration the parts below override; test/support/config.ts `testConfig()` when absent. */
  config?: Config;
  /** Custom tracking domains (resolvers, ACME server, ...). */
  trackingDomains?: TrackingDomainConfig;
  /** The clock of charges and idempotency keys, for the app and `services` alike. */
  now?: () => Date;
  /** Webhook delivery (test/webhooks.test.ts: loopback receivers, a short schedule). */
  webhooks?: WebhookConfig;
  /** E-mail settings (a loopback SMTP server: test/support/smtp.ts). */
  mail?: MailConfig;
  notify?: Partial<NotifyConfig>;
  /** Reverse DNS of visitor addresses (a loopback DNS server: test/support/dns-server.ts); off when absent. */
  reverseDns?: ReverseDnsConfig;
  retention?: RetentionConfig;
  /**
   * `process`: without TEST_DATABASE_URL, the embedded database in its own process over the
   * PostgreSQL protocol, as `npm start` runs it, instead of PGlite in the test's process (where
   * WebAssembly statements run on the test's own event loop).
   */
  embedded?: "process";
}

export interface TestApi {
  db: TestDatabase;
  app: ReturnType<typeof createApp>;
  services: Services;
  /** supertest against the app, with the key of `tenant` unless another is given. */
  request: () => supertest.Agent;
  /** Every log line the app wrote. */
  logs: string[];
  /** Another app on the same database, logs and report, with other options (limits, HTTPS, ...). */
  appWith(options: TestAppOptions): ReturnType<typeof createApp>;
  /** The logger that writes them (for the certificate worker a test starts). */
  logger: Logger;
  /** The app listening on a loopback port (for clients that need a URL); closed with `close`. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

/** Where the run's report material goes (set by test/support/global-setup.ts). */
const reportDir = process.env.CONTRACT_REPORT_DIR;

function record(file: string, line: string): void {
  if (reportDir) appendFileSync(path.join(reportDir, `${file}-${process.pid}.log`), line + "\n");
}

/** Log lines written elsewhere (servers run as child processes) join the run's checks too. */
export function recordLogLine(line: string): void {
  record("logs", line);
}

/**
 * The rate limit of the in-process test app is on (every response carries the RateLimit headers)
 * but high enough never to throttle a test file; test/rate-limit.test.ts passes its own limiter.
 */
export async function startTestApi({ config: base = testConfig(), trackingDomains, now, mail, notify, webhooks, reverseDns, retention, embedded, ...options }: TestApiOptions = {}): Promise<TestApi> {
  const config: Config = {
    ...base,
    trackingDomains: trackingDomains ?? base.trackingDomains,
    webhooks: webhooks ?? base.webhooks,
    mail: mail ?? base.mail,
    notify: { ...base.notify, ...notify },
    tracking: { ...base.tracking, reverseDns: reverseDns ?? base.tracking.reverseDns },
    retention: retention ?? base.retention,
  };
  assertDnsOnMachine(config, "the test API's configuration");
  const db = await createTestDatabase({ embedded });
  const logs: string[] = [];
  const logger = createLogger("info", (line) => {
    logs.push(line);
    record("logs", line);
  });
  const services = createServices(db.prisma, { config, logger, now, sql: db.sql });
  const appWith = (variant: TestAppOptions) =>
    createApp({
      db,
      services,
      logger,
      validateResponses: true,
      rateLimiter: memoryRateLimiter({ requests: 1_000_000, windowSeconds: 60 }),
      ...variant,
      observe: (operationId, status) => record("coverage", `${operationId ?? "-"} ${status}`),
    });
  const app = appWith(options);
  const servers: Server[] = [];
  return {
    db,
    app,
    services,
    request: () => supertest.agent(app),
    logs,
    appWith,
    logger,
    async listen() {
      const server = app.listen(0, "127.0.0.1");
      servers.push(server);
      await once(server, "listening");
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    async close() {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
      await db.close();
    },
  };
}
