// The visits of an address range are read and deleted through the btree index on each visit's
// range ("Visit_range_idx"), whatever the history holds (issue 39 item 6): the condition the
// writer's withdrawal builds (visitInside) must match the index's expression, or every batch with
// pending events scans "Visit". Sequential scans are switched off here, so a plan that cannot use
// the index shows as one; and the condition finds exactly the visits inside the networks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Prisma } from "../generated/prisma/client.ts";
import { visitInside } from "../server/tracking/write/visit-store.ts";
import { createServices } from "../server/services/index.ts";
import { testConfig } from "./support/config.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { createTenant } from "./support/tenants.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  const tenant = await createTenant(createServices(db.prisma, { config: testConfig() }), "Ranges");
  const [accountId, datasetId] = [tenant.accountId, tenant.datasets[0]];
  await db.prisma.$executeRaw`INSERT INTO "Lead" ("accountId", "datasetId", id, "organizationName", "firstVisitAt", "lastVisitAt", "visitCount", "identitySource", "identityConfidence")
    VALUES (${accountId}, ${datasetId}, 'lead_range', 'Ranges', now(), now(), 7, 'form_email', 0.8)`;
  await db.prisma.$executeRaw`INSERT INTO "Visitor" ("accountId", "datasetId", id, "leadId", "firstSeenAt", "lastSeenAt")
    SELECT ${accountId}, ${datasetId}, 'v' || g, 'lead_range', now(), now() FROM generate_series(0, 6) g`;
  const visits = [
    "198.51.100.7", "198.51.100.200", "198.51.101.7", "203.0.113.9", "2001:db8:1:2::5", "2001:db8:1:ffff::9", "2001:db8:2::1",
  ].map((ip, i) => Prisma.sql`(${accountId}, ${datasetId}, ${"lead_range"}, ${`v${i}`}, now(), ${"https://x.test/"}, ${ip}, ${"isp"})`);
  await db.prisma.$executeRaw`INSERT INTO "Visit" ("accountId", "datasetId", "leadId", "visitorId", at, url, ip, "networkType") VALUES ${Prisma.join(visits)}`;
});
afterAll(async () => {
  await db?.close();
});

/** The addresses of the visits inside these networks, in order. */
async function inside(networks: string[]): Promise<string[]> {
  const rows = await db.prisma.$queryRaw<{ ip: string }[]>`SELECT v.ip FROM "Visit" v WHERE ${visitInside(networks)} ORDER BY v.ip`;
  return rows.map((r) => r.ip);
}

/** The plan of the condition's query, as text, with sequential scans off. */
async function planOf(networks: string[]): Promise<string> {
  return db.prisma.$transaction(async (tx) => {
    await tx.$executeRaw`SET LOCAL enable_seqscan = off`;
    const rows = await tx.$queryRaw<{ "QUERY PLAN": string }[]>`EXPLAIN SELECT v.ip FROM "Visit" v WHERE ${visitInside(networks)}`;
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  });
}

describe("visitInside", () => {
  it("when the networks are ranges, narrower networks or single addresses, then exactly the visits inside them are found", async () => {
    expect(await inside(["198.51.100.0/24"])).toEqual(["198.51.100.200", "198.51.100.7"]);
    expect(await inside(["198.51.100.0/25", "203.0.113.9/32"])).toEqual(["198.51.100.7", "203.0.113.9"]);
    expect(await inside(["198.51.100.0/23"])).toEqual(["198.51.100.200", "198.51.100.7", "198.51.101.7"]);
    expect(await inside(["2001:db8:1::/48"])).toEqual(["2001:db8:1:2::5", "2001:db8:1:ffff::9"]);
    expect(await inside(["2001:db8:1:2::/64", "2001:db8:2::1/128"])).toEqual(["2001:db8:1:2::5", "2001:db8:2::1"]);
    // wider than the ranges rangesOf lists (a /32 covers 65,536 /48s): compared row by row, still exact
    expect(await inside(["2001:db8::/32"])).toEqual(["2001:db8:1:2::5", "2001:db8:1:ffff::9", "2001:db8:2::1"]);
  });

  it("when the networks are ranges (withdrawal's case), then the plan reads the range index, not the whole table", async () => {
    for (const networks of [["198.51.100.0/24", "2001:db8:1::/48"], ["203.0.113.9/32"]]) {
      const plan = await planOf(networks);
      // the table's index, or its partitions' copies of it (`<partition>_network_idx`)
      expect(plan, plan).toMatch(/Visit_range_idx|network_idx/);
      expect(plan, plan).not.toMatch(/Seq Scan on "Visit_p/);
    }
  });
});
