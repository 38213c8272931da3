// Migrations through Prisma's own schema engine, compiled to WebAssembly: no engine binary is
// downloaded. It reads and writes the standard `prisma/migrations/<timestamp>_<name>/` folders
// and the `_prisma_migrations` table, so `prisma migrate deploy` on a machine that has the
// binary sees the same history.
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import {
  bindMigrationAwareSqlAdapterFactory,
  type SqlMigrationAwareDriverAdapterFactory,
} from "@prisma/driver-adapter-utils";
import { PrismaPGlite } from "pglite-prisma-adapter";
import type { MigrationList, SchemaEngine } from "@prisma/schema-engine-wasm";
import { fromRoot } from "../paths.ts";

export const migrationsDir = fromRoot("prisma/migrations");
export const schemaPath = fromRoot("prisma/schema.prisma");

type EngineModule = typeof import("@prisma/schema-engine-wasm");
let engineModule: Promise<EngineModule> | undefined;

/**
 * The engine leaves a 10-second timer behind after its work, which kept every command that
 * migrates (the operator CLI) alive 10 s after it was done: its timers must not hold the process.
 */
function withUnrefTimers(bindings: object): WebAssembly.ModuleImports {
  const imports = { ...bindings } as WebAssembly.ModuleImports;
  for (const [name, value] of Object.entries(bindings)) {
    if (!name.startsWith("__wbg_setTimeout_") || typeof value !== "function") continue;
    imports[name] = (...args: unknown[]) => {
      const timer = (value as (...a: unknown[]) => unknown)(...args);
      (timer as NodeJS.Timeout | undefined)?.unref?.();
      return timer;
    };
  }
  return imports;
}

/** The package entry imports the .wasm as an ES module, which Node refuses: instantiate it by hand. */
function loadEngineModule(): Promise<EngineModule> {
  engineModule ??= (async () => {
    const require = createRequire(import.meta.url);
    const bindingsPath = require.resolve("@prisma/schema-engine-wasm/schema_engine_bg");
    const bindings = (await import("@prisma/schema-engine-wasm/schema_engine_bg")) as EngineModule & {
      __wbg_set_wasm(exports: WebAssembly.Exports): void;
    };
    const bytes = await readFile(path.join(path.dirname(bindingsPath), "schema_engine_bg.wasm"));
    const { instance } = await WebAssembly.instantiate(bytes, { "./schema_engine_bg.js": withUnrefTimers(bindings) });
    bindings.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return bindings;
  })();
  return engineModule;
}

async function withEngine<T>(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  use: (engine: SchemaEngine) => Promise<T>,
): Promise<T> {
  const { SchemaEngine } = await loadEngineModule();
  const datamodel = await readFile(schemaPath, "utf8");
  const log = () => {}; // the engine's tracing output is not for users
  const engine = await SchemaEngine.new(
    { datamodels: [[schemaPath, datamodel]] },
    log,
    bindMigrationAwareSqlAdapterFactory(adapterFactory),
  );
  try {
    return await use(engine);
  } finally {
    engine.free();
  }
}

export async function readMigrations(dir = migrationsDir): Promise<MigrationList> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const folders = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const lockPath = path.join(dir, "migration_lock.toml");
  return {
    baseDir: dir,
    lockfile: { path: "migration_lock.toml", content: await readFile(lockPath, "utf8").catch(() => null) },
    shadowDbInitScript: "",
    migrationDirectories: await Promise.all(
      folders.map(async (folder) => {
        const content = await readFile(path.join(dir, folder, "migration.sql"), "utf8");
        return { path: folder, migrationFile: { path: "migration.sql", content: { tag: "ok" as const, value: content } } };
      }),
    ),
  };
}

const noFilters = { externalTables: [], externalEnums: [] };

/**
 * True when every migration folder is recorded as finished in `_prisma_migrations`: then there is
 * nothing to apply and the schema engine (seconds to load) need not start. `query` reads the
 * database; a missing table means a new database.
 */
export async function allMigrationsApplied(query: (sql: string) => Promise<{ migration_name: string }[]>): Promise<boolean> {
  const { migrationDirectories } = await readMigrations();
  const rows = await query(
    `SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  ).catch(() => []);
  const applied = new Set(rows.map((r) => r.migration_name));
  return migrationDirectories.every((m) => applied.has(m.path));
}

/** Applies every pending migration; returns the names of those applied now. */
export async function applyMigrations(adapterFactory: SqlMigrationAwareDriverAdapterFactory): Promise<string[]> {
  const migrationsList = await readMigrations();
  return withEngine(adapterFactory, async (engine) => {
    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList, filters: noFilters });
    return appliedMigrationNames;
  });
}

/**
 * The SQL that takes the database described by the migrations to the one described by
 * schema.prisma; empty when they agree. An in-memory PGlite is the shadow database.
 */
export async function diffMigrationsToSchema(): Promise<string> {
  const migrationsList = await readMigrations();
  const datamodel = await readFile(schemaPath, "utf8");
  const shadow = new PGlite();
  try {
    return await withEngine(new PrismaPGlite(shadow), async (engine) => {
      const { stdout } = await engine.diff({
        from: { tag: "migrations", ...migrationsList },
        to: { tag: "schemaDatamodel", files: [{ path: schemaPath, content: datamodel }] },
        script: true,
        exitCode: null,
        filters: noFilters,
      });
      return (stdout ?? "").replace(/^-- This is an empty migration\.\s*$/m, "").trim();
    });
  } finally {
    await shadow.close();
  }
}
