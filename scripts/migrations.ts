// npm run migrate:apply | migrate:create -- <name> | migrate:check
// apply: pending migrations on DATABASE_URL (or the embedded database);
// create: writes the next migration from the difference between migrations and schema.prisma;
// check: exits 1 when schema.prisma has changes no migration holds (CI's drift check).
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { diffMigrationsToSchema, migrationsDir } from "../server/db/migrations.ts";
import { openDatabaseOrExit } from "../server/db/database.ts";
import { loadOperatorConfig } from "../server/config.ts";

const [command, name] = process.argv.slice(2);

async function main(): Promise<number> {
  switch (command) {
    case "apply": {
      const db = await openDatabaseOrExit(loadOperatorConfig(process.env).database);
      try {
        const applied = await db.migrate();
        console.log(applied.length ? `applied: ${applied.join(", ")}` : "database is up to date");
      } finally {
        await db.close();
      }
      return 0;
    }
    case "create": {
      if (!name || !/^[a-z0-9_]+$/.test(name)) {
        console.error("usage: npm run migrate:create -- <snake_case_name>");
        return 2;
      }
      const sql = await diffMigrationsToSchema();
      if (!sql) {
        console.log("schema.prisma and the migrations agree: nothing to create");
        return 0;
      }
      const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
      const folder = path.join(migrationsDir, `${stamp}_${name}`);
      await mkdir(folder, { recursive: true });
      await writeFile(path.join(folder, "migration.sql"), sql + "\n");
      console.log(`created ${path.relative(process.cwd(), folder)}/migration.sql`);
      return 0;
    }
    case "check": {
      const sql = await diffMigrationsToSchema();
      if (sql) {
        console.error("schema.prisma has changes that no migration holds; run npm run migrate:create -- <name>:\n" + sql);
        return 1;
      }
      console.log("migrations and schema.prisma agree");
      return 0;
    }
    default:
      console.error("usage: migrations.ts apply | create <name> | check");
      return 2;
  }
}

process.exitCode = await main();
