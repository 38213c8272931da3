// What most contract-test files start from: a fresh app and database, an "Acme" tenant to test
// with and a "Globex" tenant for the cross-account cases.
import { startTestApi, type TestApi } from "./api.ts";
import { createTenant, type Tenant } from "./tenants.ts";

export interface Suite {
  api: TestApi;
  tenant: Tenant;
  other: Tenant;
}

export async function startWithTenants(): Promise<Suite> {
  const api = await startTestApi();
  return { api, tenant: await createTenant(api.services, "Acme"), other: await createTenant(api.services, "Globex") };
}

/** The API key header of a tenant. */
export const as = (key: string) => ({ "x-api-key": key });
