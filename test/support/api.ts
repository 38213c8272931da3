// A running app on a fresh database, plus what every test file needs around it.
import { appendFileSync } from "node:fs";
import path from "node:path";
import supertest from "supertest";
import { createApp } from "../../server/app.ts";
import { createLogger } from "../../server/logging.ts";
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
  close(): Promise<void>;
}

/** Where the run's report material goes (set by test/support/global-setup.ts). */
const reportDir = process.env.CONTRACT_REPORT_DIR;

function record(file: string, line: string): void {
  if (reportDir) appendFileSync(path.join(reportDir, `${file}-${process.pid}.log`), line + "\n");
}

/** `now`: the clock of charges and idempotency keys, for the app and `services` alike. */
export async function startTestApi({ now }: { now?: () => Date } = {}): Promise<TestApi> {
  const db = await createTestDatabase();
  const logs: string[] = [];
  const logger = createLogger("info", (line) => {
    logs.push(line);
    record("logs", line);
  });
  const app = createApp({
    db,
    logger,
    validateResponses: true,
    observe: (operationId, status) => record("coverage", `${operationId ?? "-"} ${status}`),
    now,
  });
  return {
    db,
    app,
    services: createServices(db.prisma, { now }),
    request: () => supertest.agent(app),
    logs,
    close: () => db.close(),
  };
}
