// npm run bench:leads-plan: fills one dataset of an in-memory embedded database (PGlite) with
// 100,000 generated leads and exclusion rules, then prints EXPLAIN (ANALYZE) of the listing's own
// query (server/services/leads.ts leadListingSql) for a filtered, excluded, third page, and for a
// tag filter. What to look for: an index scan on Lead_datasetId_lastVisitAt_id_idx that starts at
// the cursor (the keyset as Index Cond) and stops after the page (Limit), anti-joins on the
// rules' primary key, and no sort of the whole dataset.
import { Prisma } from "../generated/prisma/client.ts";
import { openDatabase } from "../server/db/database.ts";
import { generateLeads } from "../server/lead-generator.ts";
import type { SegmentFilter } from "../server/services/lead-filter.ts";
import { createServices } from "../server/services/index.ts";
import { type LeadPosition, leadListingSql } from "../server/services/leads.ts";
import { loadConfig } from "../server/config.ts";
import { HERMETIC_DNS_ENV } from "../test/support/config.ts";
import * as leads from "../server/services/leads.ts";
import * as datasets from "../server/services/datasets.ts";
import * as accounts from "../server/services/accounts.ts";

const LEADS = Number(process.env.LEADS ?? 100_000);
const PAGE = 50;

const db = await openDatabase({ url: process.env.DATABASE_URL });
await db.migrate();
const services = createServices(db.prisma, { config: loadConfig(HERMETIC_DNS_ENV) });
const adminEmail = `bench-${Date.now()}@bench.example`;
const { accountId } = await accounts.createAccount(services, { name: "Bench", licenceDays: 1, admin: { email: adminEmail, name: "Bench" } });
const datasetId = await datasets.create(services, accountId, adminEmail, { name: "Bench website" });
// a second dataset, so that the index has to separate datasets
const neighbour = await datasets.create(services, accountId, adminEmail, { name: "Neighbour" });

const started = Date.now();
const end = new Date("2026-11-01T00:00:00Z");
await leads.insertLeads(services, accountId, datasetId, generateLeads({ count: LEADS, seed: 42, end }));
await leads.insertLeads(services, accountId, neighbour, generateLeads({ count: LEADS / 10, seed: 7, end }));
for (const data of ["acme-software.example", "globex-bank.example", "hooli-labs.example"]) {
  await leads.addExclusion(services, accountId, { datasetId, type: "organizationDomain", data });
}
await leads.addExclusion(services, accountId, { datasetId, type: "organizationName", data: "Wayne Motors GmbH" });
await leads.addExclusion(services, accountId, { datasetId, type: "use_id", data: "lead_000010" });
await db.prisma.$executeRaw`ANALYZE`;
console.log(`${LEADS} leads (+${LEADS / 10} in another dataset) and 5 rules written in ${((Date.now() - started) / 1000).toFixed(1)} s (${db.kind})\n`);

/** The position after `pages` pages, read through the same query. */
async function positionAfter(filters: SegmentFilter[], pages: number): Promise<LeadPosition | undefined> {
  let after: LeadPosition | undefined;
  for (let i = 0; i < pages; i++) {
    const rows = await db.prisma.$queryRaw<{ id: string; lastVisitAt: Date }[]>(leadListingSql({ datasetId, filters, after, limit: PAGE }));
    const last = rows[rows.length - 1];
    if (!last) return after;
    after = { lastVisitAt: last.lastVisitAt.toISOString(), leadId: last.id };
  }
  return after;
}

async function explain(title: string, filters: SegmentFilter[]): Promise<void> {
  const after = await positionAfter(filters, 2);
  const query = leadListingSql({ datasetId, filters, after, limit: PAGE + 1 });
  const plan = await db.prisma.$queryRaw<{ "QUERY PLAN": string }[]>(Prisma.sql`EXPLAIN (ANALYZE, BUFFERS) ${query}`);
  console.log(`== ${title}\n   filter: ${JSON.stringify(filters)}\n   page 3 of ${PAGE}, after ${JSON.stringify(after)}\n`);
  console.log(plan.map((row) => row["QUERY PLAN"]).join("\n"), "\n");
}

await explain("Filtered, excluded, paged listing", [
  {
    match: "all",
    conditions: [
      { field: "country", operator: "in", value: ["DE", "AT", "CH"] },
      { field: "employeeCount", operator: "gte", value: 200 },
    ],
  },
]);
await explain("Selective tag filter (the planner picks the GIN index on tags or the keyset index)", [
  {
    match: "all",
    conditions: [
      { field: "tags", operator: "contains", value: "partner" },
      { field: "tags", operator: "contains", value: "customer" },
    ],
  },
]);
await db.close();
