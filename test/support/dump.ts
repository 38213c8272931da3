// A dump of every row of every table as text, for the erasure tests' search for a data subject:
// pg_dump on PostgreSQL, one SELECT per table on PGlite. The contact store is the operator's.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect } from "vitest";
import type { TestApi } from "./api.ts";

export async function dumpOfEveryTable(api: TestApi): Promise<string> {
  const url = api.db.url;
  if (url) {
    const { stdout } = await promisify(execFile)("pg_dump", ["--data-only", "--exclude-table-data=\"Contact\"", url], { maxBuffer: 256 * 1024 * 1024 });
    return stdout;
  }
  const tables = await api.db.prisma.$queryRaw<{ name: string }[]>`
    SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'Contact'`;
  expect(tables.length).toBeGreaterThan(20);
  const parts: string[] = [];
  for (const { name } of tables) {
    const [row] = await api.db.prisma.$queryRawUnsafe<{ text: string | null }[]>(`SELECT string_agg(x::text, E'\\n') AS text FROM "${name}" x`);
    parts.push(`${name}\n${row?.text ?? ""}`);
  }
  return parts.join("\n");
}
