// The demo account that `npm start` creates on first run, so a new user has something to call.
import { generateProfile, generateProfiles } from "./contacts/generate.ts";
import { generateLeads } from "./lead-generator.ts";
import type { Services } from "./services/index.ts";
import { addExclusion, insertLeads } from "./services/leads.ts";
import * as leadOperations from "./services/lead-operations.ts";
import * as contacts from "./services/contacts.ts";
import * as segments from "./services/segments.ts";
import * as segmentPreferences from "./services/segment-preferences.ts";
import * as datasets from "./services/datasets.ts";
import * as users from "./services/users.ts";
import * as accounts from "./services/accounts.ts";

export const DEMO_ADMIN_EMAIL = "admin@demo.example";
const DEMO_KEY_LABEL = "demo key (npm start)";
/** The demo's contact profiles: profiles 0..499 of this generator seed. */
const DEMO_CONTACT_SEED = 2026;
const DEMO_CONTACTS = 500;

export interface Demo {
  accountId: string;
  adminEmail: string;
  key: string;
  datasetIds: string[];
  /** An e-mail address whose lookup finds a profile. */
  contactEmail: string;
  /** The last name of that profile (a look-up hint it confirms). */
  contactLastName: string;
}

/**
 * Creates the demo account once (an admin, two members, two datasets, leads, segments and an
 * exclusion rule in the first dataset) and the demo's contact profiles (for the e-mail lookup);
 * at every start it revokes
 * the previous demo key and issues a new one, since keys are stored hashed and cannot be shown again.
 */
export async function ensureDemo(services: Services): Promise<Demo> {
  const accountId = (await completeDemoAccount(services)) ?? (await createDemoAccount(services));
  for (const key of await accounts.listApiKeys(services, accountId)) {
    if (key.label === DEMO_KEY_LABEL) await accounts.revokeApiKey(services, key.id);
  }
  const { key } = await accounts.createApiKey(services, accountId, DEMO_KEY_LABEL);
  const datasetIds = (await datasets.list(services, accountId)).map((d) => d.id);
  // the demo website's form is tracked and enriched (a found profile costs a credit)
  await datasets.setFormTracking(services, accountId, DEMO_ADMIN_EMAIL, datasetIds[0]!, { formTracking: true, contactEnrichment: true });
  // an upsert: a restart leaves them as they are
  await contacts.upsertMany(services, [...generateProfiles(DEMO_CONTACT_SEED, DEMO_CONTACTS)]);
  const contact = generateProfile(DEMO_CONTACT_SEED, 0);
  const contactLastName = contact.fullName.split(" ").at(-1)!;
  return { accountId, adminEmail: DEMO_ADMIN_EMAIL, key, datasetIds, contactEmail: contact.email, contactLastName };
}

/** The demo website's dataset once the demo is completely seeded (the page `/` links its /demo), else undefined. */
export async function demoWebsiteDataset(services: Pick<Services, "db">): Promise<string | undefined> {
  const accountId = await accounts.accountAdministeredBy(services, DEMO_ADMIN_EMAIL);
  if (!accountId || (await accounts.nameOf(services, accountId)) !== DEMO_NAME) return undefined;
  return (await datasets.list(services, accountId))[0]?.id;
}

const DEMO_NAME = "Demo Company";
/** The demo account's name until its last seed step is done: the mark of a seed that did not finish. */
const DEMO_NAME_SEEDING = "Demo Company (seeding)";

/**
 * The demo account, when a previous start finished seeding it. One a previous start left
 * half-seeded (killed, or failed on the way) is deleted with all its content (one statement) and
 * seeded again: the seed runs many statements, but it never stays half done.
 */
async function completeDemoAccount(services: Services): Promise<string | undefined> {
  const accountId = await accounts.accountAdministeredBy(services, DEMO_ADMIN_EMAIL);
  if (!accountId) return undefined;
  if ((await accounts.nameOf(services, accountId)) !== DEMO_NAME_SEEDING) return accountId;
  await accounts.deleteAccount(services, accountId);
  return undefined;
}

async function createDemoAccount(services: Services): Promise<string> {
  const { accountId } = await accounts.createAccount(services, {
    name: DEMO_NAME_SEEDING,
    licenceDays: 365,
    admin: { email: DEMO_ADMIN_EMAIL, name: "Alex Admin" },
  });
  const website = await datasets.create(services, accountId, DEMO_ADMIN_EMAIL, { name: "demo.example website", domain: "demo.example" });
  await datasets.create(services, accountId, DEMO_ADMIN_EMAIL, { name: "Demo shop", domain: "shop.demo.example" });
  const maria = await users.addMember(services, accountId, DEMO_ADMIN_EMAIL, { email: "maria@demo.example", name: "Maria Member", role: "member", datasetIds: [website] });
  await users.addMember(services, accountId, DEMO_ADMIN_EMAIL, { email: "li@demo.example", name: "Li Analyst", role: "member" });
  await seedLeads(services, accountId, website, maria);
  await accounts.rename(services, accountId, DEMO_NAME); // the seed is complete
  return accountId;
}

/** A competitor that visits the demo website: the demo's exclusion rule hides it. */
export const DEMO_COMPETITOR_DOMAIN = "rivalmetrics.example";

/**
 * 300 generated leads (seeded, so every demo has the same organisations), two visits from a
 * competitor hidden by an exclusion rule, two segments, Maria's default segment, and a few leads
 * assigned to her.
 */
async function seedLeads(services: Services, accountId: string, datasetId: string, mariaId: number): Promise<void> {
  const now = new Date();
  const leads = generateLeads({ count: 300, seed: 2026, end: now });
  for (const [i, city] of ["Berlin", "Vienna"].entries()) {
    leads.push({
      leadId: `lead_rival_${i + 1}`,
      organizationName: "Rival Metrics GmbH",
      organizationDomain: DEMO_COMPETITOR_DOMAIN,
      industry: "Software",
      employeeCount: 850,
      country: i ? "AT" : "DE",
      city,
      firstVisitAt: new Date(now.getTime() - (10 + i) * 86_400_000),
      lastVisitAt: new Date(now.getTime() - i * 3_600_000),
      visitCount: 14,
    });
  }
  await insertLeads(services, accountId, datasetId, leads);
  await addExclusion(services, accountId, { datasetId, type: "organizationDomain", data: DEMO_COMPETITOR_DOMAIN });
  await segments.create(services, accountId, DEMO_ADMIN_EMAIL, {
    datasetId,
    name: "German enterprise visitors",
    filters: { match: "all", conditions: [{ field: "country", operator: "eq", value: "DE" }, { field: "employeeCount", operator: "gte", value: 500 }] },
    emailPreferences: { enabled: true, frequency: "weekly" },
  });
  const hot = await segments.create(services, accountId, DEMO_ADMIN_EMAIL, {
    datasetId,
    name: "Hot software leads",
    filters: { match: "all", conditions: [{ field: "tags", operator: "contains", value: "hot" }, { field: "industry", operator: "eq", value: "Software" }] },
  });
  await segmentPreferences.set(services, accountId, DEMO_ADMIN_EMAIL, { segmentId: hot, datasetId, userIds: [mariaId] });
  for (const lead of leads.slice(0, 5)) {
    await leadOperations.assign(services, accountId, { datasetId, leadId: lead.leadId, assigneeUserId: mariaId });
  }
}
