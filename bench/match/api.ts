// The service as the world sees it: the collector and the partner API over HTTP on loopback. Every
// answer must have its documented status, else the call throws WrongAnswer (the run exits 1).
import type { components } from "../../generated/openapi.ts";
import type { CollectedEvent } from "./world.ts";

type Lead = components["schemas"]["LeadDTO"];
type Visit = components["schemas"]["VisitDTO"];
export type IpLookup = components["schemas"]["IpLookupResponse"];

export class WrongAnswer extends Error {}

export interface DeclaredNetwork {
  cidr: string;
  organizationName: string;
  organizationDomain: string;
}

/** Largest page of the partner API's lists. */
const PAGE = 500;

/** X-Request-Start as nginx writes it: `t=` seconds since the epoch, with milliseconds. */
const requestStart = (at: Date) => `t=${(at.getTime() / 1000).toFixed(3)}`;

export function serviceClient(baseUrl: string, apiKey: string, actingUser: string) {
  async function call(method: string, path: string, query: Record<string, string | undefined>, expected: readonly number[], body?: unknown) {
    const url = new URL(path, baseUrl);
    for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, value);
    const response = await fetch(url, {
      method,
      headers: { "x-api-key": apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!expected.includes(response.status)) throw new WrongAnswer(`${method} ${path}: ${response.status} (expected ${expected.join(" or ")}): ${text.slice(0, 300)}`);
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  }
  const acting = { email: actingUser };

  /** Every item of a cursor-paged list. */
  async function all<T>(path: string, query: Record<string, string>): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    do {
      const { body } = await call("GET", path, { ...acting, ...query, limit: String(PAGE), cursor }, [200]);
      const page = body as { data: T[]; nextCursor: string | null };
      items.push(...page.data);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return items;
  }

  return {
    /** GET /v1/ip-lookup: 200 for an announced address. */
    async ipLookup(ip: string): Promise<IpLookup> {
      return (await call("GET", "/v1/ip-lookup", { ip }, [200])).body as IpLookup;
    },

    /** Form tracking on (no enrichment: no credits), addresses kept unmasked. */
    async enableForms(datasetId: string): Promise<void> {
      const query = { ...acting, formTracking: "true", allowIpMasking: "false", formInputAttribute: "name" };
      await call("PUT", `/v1/datasets/${datasetId}/form-tracking`, query, [204]);
    },

    /** POST /v1/declared-networks: 201 declared; on the first call also 404 or 405, a service without the operation. */
    async declareNetwork(network: DeclaredNetwork, firstCall: boolean): Promise<number> {
      return (await call("POST", "/v1/declared-networks", acting, firstCall ? [201, 404, 405] : [201], network)).status;
    },

    /**
     * POST /collect with one batch, as the trusted proxy would forward it: the client's address and
     * the world's time of receipt (X-Request-Start, TRACKING_RECEIVED_AT_HEADER); 202 with
     * `received` equal to the events sent; answers `queued`.
     */
    async collect(datasetId: string, events: CollectedEvent[], clientAddress: string, userAgent: string, receivedAt: Date): Promise<number> {
      const url = new URL("/collect", baseUrl);
      url.searchParams.set("dataset", datasetId);
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "text/plain", "user-agent": userAgent, "x-forwarded-for": clientAddress, "x-request-start": requestStart(receivedAt) },
        body: JSON.stringify({ events }),
      });
      const text = await response.text();
      if (response.status !== 202) throw new WrongAnswer(`POST /collect: ${response.status} (expected 202): ${text.slice(0, 300)}`);
      const answer = JSON.parse(text) as { received: number; queued: number };
      if (answer.received !== events.length || answer.queued > answer.received) {
        throw new WrongAnswer(`POST /collect: received ${answer.received}, queued ${answer.queued} of ${events.length} events sent`);
      }
      return answer.queued;
    },

    leads: (datasetId: string) => all<Lead>("/v1/leads", { datasetId }),
    leadVisits: (datasetId: string, leadId: string) => all<Visit>(`/v1/leads/${encodeURIComponent(leadId)}/visits`, { datasetId }),

    /** The writer's lag from GET /metrics (`ingest_writer_lag_seconds`); undefined when the service does not report it. */
    async writerLag(): Promise<number | undefined> {
      const response = await fetch(new URL("/metrics", baseUrl));
      const text = await response.text();
      if (response.status !== 200) throw new WrongAnswer(`GET /metrics: ${response.status} (expected 200)`);
      const line = text.split("\n").find((l) => l.startsWith("ingest_writer_lag_seconds "));
      return line ? Number(line.split(" ")[1]) : undefined;
    },
  };
}

export type ServiceClient = ReturnType<typeof serviceClient>;
