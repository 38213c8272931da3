// Fixture accounts built through the services: an admin, a member with access to one dataset,
// and two datasets; each test file makes its own, and a second tenant for cross-account cases.
import { randomBytes } from "node:crypto";
import type { Services } from "../../server/services/index.ts";
import * as datasets from "../../server/services/datasets.ts";
import * as users from "../../server/services/users.ts";
import * as accounts from "../../server/services/accounts.ts";

export interface Person {
  id: number;
  email: string;
}

export interface Tenant {
  accountId: string;
  key: string;
  admin: Person;
  member: Person;
  /** datasets[0] is reachable by the member, datasets[1] is not. */
  datasets: [string, string];
}

let counter = 0;

/** A unique e-mail address; mixed case on purpose, since addresses are case-insensitive. */
export function uniqueEmail(who: string): string {
  counter += 1;
  return `${who}.${counter}.${randomBytes(3).toString("hex")}@Example.test`;
}

export async function createTenant(services: Services, name = "Tenant"): Promise<Tenant> {
  const adminEmail = uniqueEmail("admin");
  const { accountId, adminUserId } = await accounts.createAccount(services, {
    name,
    licenceDays: 30,
    admin: { email: adminEmail, name: "Ada Admin" },
  });
  const { key } = await accounts.createApiKey(services, accountId, "tests");
  const first = await datasets.create(services, accountId, adminEmail, { name: `${name} website` });
  const second = await datasets.create(services, accountId, adminEmail, { name: `${name} shop` });
  const memberEmail = uniqueEmail("member");
  const memberId = await users.addMember(services, accountId, adminEmail, {
    email: memberEmail,
    name: "Max Member",
    role: "member",
    datasetIds: [first],
  });
  return {
    accountId,
    key,
    admin: { id: adminUserId, email: adminEmail },
    member: { id: memberId, email: memberEmail },
    datasets: [first, second],
  };
}
