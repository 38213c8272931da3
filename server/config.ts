// All configuration comes from the environment; defaults give the zero-setup embedded mode.
import path from "node:path";

export interface DatabaseConfig {
  /** A PostgreSQL URL; when absent the embedded PGlite database in `dataDir` is used. */
  url?: string;
  /** Embedded database directory; undefined means in memory (tests). */
  dataDir?: string;
}

export interface Config {
  port: number;
  host: string;
  production: boolean;
  /** Validate every response against the spec (on outside production). */
  validateResponses: boolean;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** Create the demo account and print a demo key at start (off in production). */
  seedDemo: boolean;
  database: DatabaseConfig;
}

function flag(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === "") return fallback;
  return ["1", "true", "yes", "on"].includes(value.toLowerCase());
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const production = env.NODE_ENV === "production";
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${env.PORT}"`);
  const logLevel = (env.LOG_LEVEL ?? "info") as Config["logLevel"];
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel)) throw new Error(`LOG_LEVEL must be debug|info|warn|error|silent`);
  return {
    port,
    host: env.HOST ?? "127.0.0.1",
    production,
    validateResponses: flag(env.VALIDATE_RESPONSES, !production),
    logLevel,
    seedDemo: flag(env.SEED_DEMO, !production),
    database: env.DATABASE_URL
      ? { url: env.DATABASE_URL }
      : { dataDir: path.resolve(env.DATA_DIR ?? ".data/pglite") },
  };
}
