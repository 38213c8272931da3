// The demo account that `npm start` creates on first run, so a new user has something to call.
import { generateProfile, generateProfiles } from "./contacts/generate.ts";
import type { Services } from "./services/index.ts";

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
}

/**
 * Creates the demo account once (an admin, two members, two datasets) and the demo's contact
 * profiles (for the e-mail lookup); at every start it revokes
 * the previous demo key and issues a new one, since keys are stored hashed and cannot be shown again.
 */
export async function ensureDemo(services: Services): Promise<Demo> {
  const accountId = (await services.accounts.accountAdministeredBy(DEMO_ADMIN_EMAIL)) ?? (await createDemoAccount(services));
  for (const key of await services.accounts.listApiKeys(accountId)) {
    if (key.label === DEMO_KEY_LABEL) await services.accounts.revokeApiKey(key.id);
  }
  const { key } = await services.accounts.createApiKey(accountId, DEMO_KEY_LABEL);
  const datasetIds = (await services.datasets.list(accountId)).map((d) => d.id);
  // an upsert: a restart leaves them as they are
  await services.contacts.upsertMany([...generateProfiles(DEMO_CONTACT_SEED, DEMO_CONTACTS)]);
  return { accountId, adminEmail: DEMO_ADMIN_EMAIL, key, datasetIds, contactEmail: generateProfile(DEMO_CONTACT_SEED, 0).email };
}

async function createDemoAccount(services: Services): Promise<string> {
  const { accountId } = await services.accounts.createAccount({
    name: "Demo Company",
    licenceDays: 365,
    admin: { email: DEMO_ADMIN_EMAIL, name: "Alex Admin" },
  });
  const website = await services.datasets.create(accountId, DEMO_ADMIN_EMAIL, { name: "demo.example website", domain: "demo.example" });
  await services.datasets.create(accountId, DEMO_ADMIN_EMAIL, { name: "Demo shop", domain: "shop.demo.example" });
  await services.users.addMember(accountId, DEMO_ADMIN_EMAIL, { email: "maria@demo.example", name: "Maria Member", datasetIds: [website] });
  await services.users.addMember(accountId, DEMO_ADMIN_EMAIL, { email: "li@demo.example", name: "Li Analyst" });
  return accountId;
}
