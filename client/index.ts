// The typed partner client: paths, parameters, bodies and responses all come from the spec.
//
//   const api = createPartnerClient({ baseUrl: "https://api.leadintel.io", apiKey: process.env.LEADINTEL_KEY! });
//   const { data, error } = await api.GET("/v1/user-datasets", { params: { query: { accountId, email } } });
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, operations, paths } from "../generated/openapi.ts";

export type { components, operations, paths };
export type PartnerClient = Client<paths>;

export interface PartnerClientOptions extends Omit<ClientOptions, "baseUrl"> {
  /** Where the API is served, without a trailing path (e.g. https://api.leadintel.io). */
  baseUrl: string;
  /** The account's API key, sent as `x-api-key` on every request. */
  apiKey: string;
}

export function createPartnerClient({ baseUrl, apiKey, headers, ...rest }: PartnerClientOptions): PartnerClient {
  return createClient<paths>({
    ...rest,
    baseUrl: baseUrl.replace(/\/+$/, ""),
    headers: { ...(headers as Record<string, string> | undefined), "x-api-key": apiKey },
  });
}
