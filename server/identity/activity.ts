// When visits come from an address, by UTC hour of the day (AddressActivity): the counts of the
// around-the-clock rule (rules.ts AROUND_THE_CLOCK). Over every account's traffic, like the
// operator and host facts: it only takes a name away, and holds no visitor id. The only module
// that writes the table.
import type { Db } from "../db/database.ts";
import { memory } from "./memory.ts";
import { usedAroundTheClock } from "./rules.ts";

type Client = Pick<Db, "$queryRaw" | "$executeRaw">;

/** A visitor seen at an address's unit (IPv4 address, IPv6 /64) at a time. */
export interface VisitorAt {
  unit: string;
  visitorId: string;
  at: Date;
}

/** Visitor-hours (and units found around the clock) a process remembers having counted. */
const REMEMBERED = 50_000;
const HOUR_MS = 3_600_000;

/** A visitor and the clock hour they were seen in (hours since the epoch): what is counted once. */
export const visitorHourOf = (visitorId: string, at: Date) => `${visitorId} ${Math.floor(at.getTime() / HOUR_MS)}`;

/** The visitor-hour a sighting at a unit falls in. */
const visitorHourKey = (v: VisitorAt) => `${v.unit} ${visitorHourOf(v.visitorId, v.at)}`;

/** Per key (a unit, or a domain and a unit), the 24 counts of visits by UTC hour. */
function hoursBy<R extends { hour: number; visits: number }>(rows: readonly R[], keyOf: (row: R) => string): Map<string, number[]> {
  const hoursOf = new Map<string, number[]>();
  for (const row of rows) {
    const hours = hoursOf.get(keyOf(row)) ?? Array<number>(24).fill(0);
    hours[row.hour] = row.visits;
    hoursOf.set(keyOf(row), hours);
  }
  return hoursOf;
}

export class AddressActivityStore {
  private readonly counted = memory<true>(REMEMBERED);
  private readonly aroundTheClock = memory<true>(REMEMBERED);

  constructor(private readonly db: Client) {}

  /**
   * Counts the visitor-hours not counted yet (a visitor's page views within one clock hour, at one
   * unit, count once); the units that are now used around the clock and were not known to be.
   */
  async record(seen: readonly VisitorAt[], now: Date, since: Date): Promise<string[]> {
    const nowMs = now.getTime();
    const counts = new Map<string, { unit: string; hour: number; visits: number; at: Date }>();
    for (const v of seen) {
      const key = visitorHourKey(v);
      if (this.counted.get(key, nowMs)) continue;
      this.counted.set(key, true, nowMs + 2 * HOUR_MS);
      const hour = v.at.getUTCHours();
      const count = counts.get(`${v.unit} ${hour}`) ?? { unit: v.unit, hour, visits: 0, at: v.at };
      count.visits += 1;
      if (v.at > count.at) count.at = v.at;
      counts.set(`${v.unit} ${hour}`, count);
    }
    if (!counts.size) return [];
    await this.db.$executeRaw`
      INSERT INTO "AddressActivity" (unit, hour, visits, "lastSeenAt")
      SELECT r.unit, r.hour, r.visits, r.at FROM jsonb_to_recordset(${JSON.stringify([...counts.values()])}::jsonb) AS r(unit text, hour int, visits int, at timestamptz)
      ON CONFLICT (unit, hour) DO UPDATE SET visits = "AddressActivity".visits + EXCLUDED.visits,
        "lastSeenAt" = greatest("AddressActivity"."lastSeenAt", EXCLUDED."lastSeenAt")`;
    const units = [...new Set([...counts.values()].map((c) => c.unit))].filter((u) => !this.aroundTheClock.get(u, nowMs));
    const found = [...(await this.unitsAroundTheClock(this.db, units, since))];
    for (const unit of found) this.aroundTheClock.set(unit, true, nowMs + 24 * HOUR_MS);
    return found;
  }

  /** Of these PTR domains, those borne (in any account's evidence) by a unit used around the clock within the window. */
  async domainsAroundTheClock(client: Client, domains: readonly string[], since: Date): Promise<Set<string>> {
    if (!domains.length) return new Set();
    const rows = await client.$queryRaw<{ domain: string; unit: string; hour: number; visits: number }[]>`
      SELECT u.domain, a.unit, a.hour, a.visits
      FROM (SELECT DISTINCT domain, unit FROM "IdentityEvidence" WHERE kind = 'reverse_dns' AND domain = ANY(${domains}::text[]) AND "lastSeenAt" > ${since}) u
        JOIN "AddressActivity" a ON a.unit = u.unit AND a."lastSeenAt" > ${since}`;
    const found = [...hoursBy(rows, (r) => `${r.domain} ${r.unit}`)].filter(([, hours]) => usedAroundTheClock(hours));
    return new Set(found.map(([key]) => key.slice(0, key.indexOf(" "))));
  }

  /** Of these units, those used around the clock within the window. */
  async unitsAroundTheClock(client: Client, units: readonly string[], since: Date): Promise<Set<string>> {
    if (!units.length) return new Set();
    const rows = await client.$queryRaw<{ unit: string; hour: number; visits: number }[]>`
      SELECT unit, hour, visits FROM "AddressActivity" WHERE unit = ANY(${units}::text[]) AND "lastSeenAt" > ${since}`;
    return new Set([...hoursBy(rows, (r) => r.unit)].filter(([, hours]) => usedAroundTheClock(hours)).map(([unit]) => unit));
  }

  /** Deletes the counts of hours last seen before `since`; how many. */
  expire(since: Date): Promise<number> {
    return this.db.$executeRaw`DELETE FROM "AddressActivity" WHERE "lastSeenAt" <= ${since}`;
  }
}
