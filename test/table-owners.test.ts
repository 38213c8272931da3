// One owner per table: every statement that writes a table lives in one file of server/ (its store;
// others call it). Read from the source: raw SQL (INSERT INTO, UPDATE, DELETE FROM, DROP TABLE,
// TRUNCATE, and "INSERT ... ON CONFLICT" alike) and Prisma's write methods on a model. A statement on
// a table named at run time (a partition: `"${month.name}"`) cannot be read so: it names the table it
// writes through visit-store.ts's partitionOf("Visit", name), and one that does not fails the check.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { partitionOf } from "../server/tracking/write/visit-store.ts";

const root = path.resolve(import.meta.dirname, "../server");
const models = [...readFileSync(path.resolve(import.meta.dirname, "../prisma/schema.prisma"), "utf8").matchAll(/^model (\w+) \{/gm)].map((m) => m[1]!);
const delegate = new Map(models.map((m) => [m[0]!.toLowerCase() + m.slice(1), m]));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    return entry.isDirectory() ? sources(file) : entry.name.endsWith(".ts") ? [file] : [];
  });
}

/** The model a table name stands for: the model, or the one whose partition it is ("Visit_default"). */
const modelOf = (table: string) => (models.includes(table) ? table : models.find((m) => table.startsWith(`${m}_`)));

const WRITE = String.raw`\b(?:INSERT INTO|UPDATE|DELETE FROM|DROP TABLE(?: IF EXISTS)?|TRUNCATE(?: TABLE)?)\s+`;

/** The tables a module's source writes, and its statements on a table named at run time that do not say which. */
function tablesWritten(source: string): { tables: Set<string>; undeclared: string[] } {
  const code = source.replace(/^\s*(\/\/|\*).*$/gm, ""); // comments say "UPDATE" too
  const tables = new Set<string>();
  const undeclared: string[] = [];
  const add = (table: string | undefined) => table && tables.add(table);
  for (const m of code.matchAll(new RegExp(`${WRITE}"(\\w+)"`, "g"))) add(modelOf(m[1]!));
  for (const m of code.matchAll(new RegExp(`${WRITE}"?\\$\\{([^}]*)\\}`, "g"))) {
    const declared = /^partitionOf\("(\w+)"/.exec(m[1]!)?.[1];
    if (declared && models.includes(declared)) add(declared);
    else undeclared.push(m[0]);
  }
  for (const m of code.matchAll(/\.(\w+)\s*\.\s*(?:create|createMany|createManyAndReturn|update|updateMany|updateManyAndReturn|upsert|delete|deleteMany)\s*\(/g)) {
    add(delegate.get(m[1]!));
  }
  return { tables, undeclared };
}

/** Every file of server/ with what it writes, by the path under server/. */
const written = sources(root).map((file) => ({ file: path.relative(root, file).split(path.sep).join("/"), ...tablesWritten(readFileSync(file, "utf8")) }));

describe("the tables' owners", () => {
  it("when the server's source is read, then each table is written from one file only", () => {
    const files = new Map<string, string[]>();
    for (const { file, tables } of written) for (const table of tables) files.set(table, [...(files.get(table) ?? []), file]);
    const shared = [...files].filter(([, where]) => where.length > 1).map(([table, where]) => `${table}: ${where.sort().join(", ")}`);
    expect(shared.sort()).toEqual([]);
    // the check reads what it should: the visits are found in their store, partitions included
    expect(files.get("Visit")).toEqual(["tracking/write/visit-store.ts"]);
    expect(files.size).toBeGreaterThan(30);
  });

  it("when a statement writes a table named at run time, then it names the table it writes", () => {
    const undeclared = written.flatMap(({ file, undeclared }) => undeclared.map((statement) => `${file}: ${statement}`));
    expect(undeclared).toEqual([]);
  });

  it("when a module writes through SQL or Prisma, then the check sees it (and not a comment)", () => {
    expect([...tablesWritten('await tx.$executeRaw`UPDATE "Lead" l SET x = 1`; db.membership.updateMany({});').tables].sort()).toEqual(["Lead", "Membership"]);
    expect([...tablesWritten('// DELETE FROM "Lead" here\nconst m = new Map(); m.delete(1); cache.lead.get(1);').tables]).toEqual([]);
    expect([...tablesWritten('tx.$executeRawUnsafe(`DELETE FROM "Visit_default" WHERE true`)').tables]).toEqual(["Visit"]);
  });

  it("when a statement names its table at run time, then the check takes the table it declares, or names the statement", () => {
    const declared = tablesWritten('`WITH m AS (DELETE FROM ${partitionOf("Visit", from)} RETURNING *) INSERT INTO ${partitionOf("Visit", to)} SELECT * FROM m`; `DROP TABLE ${partitionOf("Visit", name)}`');
    expect({ tables: [...declared.tables], undeclared: declared.undeclared }).toEqual({ tables: ["Visit"], undeclared: [] });
    const dynamic = tablesWritten('`INSERT INTO "${month.name}" SELECT 1`; `DROP TABLE "${name}"`; Prisma.sql`DELETE FROM ${Prisma.raw(table)} WHERE true`');
    expect({ tables: [...dynamic.tables], undeclared: dynamic.undeclared }).toEqual({
      tables: [],
      undeclared: ['INSERT INTO "${month.name}', 'DROP TABLE "${name}', "DELETE FROM ${Prisma.raw(table)}"],
    });
    // what a statement declares is what it writes: a name of another table's is refused
    expect(partitionOf("Visit", "Visit_p2026_11")).toBe('"Visit_p2026_11"');
    expect(() => partitionOf("Visit", "Lead")).toThrow('"Lead" is not a partition of "Visit"');
  });
});
