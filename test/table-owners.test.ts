// One owner per table: every statement that writes a table lives in one folder of server/ (a
// store per aggregate; others call it). Read from the source: raw SQL (INSERT INTO, UPDATE,
// DELETE FROM, and "INSERT ... ON CONFLICT" alike) and Prisma's write methods on a model.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../server");
const models = [...readFileSync(path.resolve(import.meta.dirname, "../prisma/schema.prisma"), "utf8").matchAll(/^model (\w+) \{/gm)].map((m) => m[1]!);
const delegate = new Map(models.map((m) => [m[0]!.toLowerCase() + m.slice(1), m]));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    return entry.isDirectory() ? sources(file) : entry.name.endsWith(".ts") ? [file] : [];
  });
}

/** The tables a module's source writes. */
function tablesWritten(source: string): Set<string> {
  const code = source.replace(/^\s*(\/\/|\*).*$/gm, ""); // comments say "UPDATE" too
  const written = new Set<string>();
  for (const m of code.matchAll(/\b(?:INSERT INTO|UPDATE|DELETE FROM)\s+"(\w+)"/g)) if (models.includes(m[1]!)) written.add(m[1]!);
  for (const m of code.matchAll(/\.(\w+)\s*\.\s*(?:create|createMany|createManyAndReturn|update|updateMany|updateManyAndReturn|upsert|delete|deleteMany)\s*\(/g)) {
    const model = delegate.get(m[1]!);
    if (model) written.add(model);
  }
  return written;
}

describe("the tables' owners", () => {
  it("when the server's source is read, then each table is written from one folder only", () => {
    const folders = new Map<string, Set<string>>();
    for (const file of sources(root)) {
      // a folder of server/ (tracking/'s rooms are one folder here)
      const folder = path.relative(root, path.dirname(file)).split(path.sep)[0] || ".";
      for (const table of tablesWritten(readFileSync(file, "utf8"))) folders.set(table, (folders.get(table) ?? new Set()).add(folder));
    }
    const shared = [...folders].filter(([, where]) => where.size > 1).map(([table, where]) => `${table}: ${[...where].sort().join(", ")}`);
    expect(shared).toEqual([]);
    // the check reads what it should: the writer's tables are found where they are written
    expect([...(folders.get("Visit") ?? [])]).toEqual(["tracking"]);
    expect(folders.size).toBeGreaterThan(30);
  });

  it("when a module writes through SQL or Prisma, then the check sees it (and not a comment)", () => {
    expect([...tablesWritten('await tx.$executeRaw`UPDATE "Lead" l SET x = 1`; db.membership.updateMany({});')].sort()).toEqual(["Lead", "Membership"]);
    expect([...tablesWritten('// DELETE FROM "Lead" here\nconst m = new Map(); m.delete(1); cache.lead.get(1);')]).toEqual([]);
  });
});
