// Drives the world through the service from outside: declares the partner's networks, sends the
// sessions through POST /collect in time order (a few visitors at once, each visitor's batches one
// after the other), each batch with its time in the world as its receive time (X-Request-Start:
// the world's days end when the run starts), waits for the writer to finish, and reads back every
// lead and its visits.
import type { DeclaredNetwork, ServiceClient } from "./api.ts";
import type { LeadReadBack } from "./evaluate.ts";
import type { Declaration, Session, World } from "./world.ts";

export interface Sent {
  requests: number;
  events: number;
  queued: number;
  /** Declared networks the service took. */
  declared: number;
  /** Whether the service has POST /v1/declared-networks (undefined: the world declared none). */
  declarationsSupported: boolean | undefined;
  /** The status that said the service has no declared networks (404 or 405). */
  declarationStatus?: number;
}

/** A session on one partner's website (its dataset). */
interface Sending {
  datasetId: string;
  session: Session;
  /** When the session starts in the world's time. */
  startsAt: Date;
}

const DAY_MS = 86_400_000;
/** Between a session's batches (at most nine: within the session's minute), so that they keep their order. */
const BATCH_MS = 5_000;

/** The UTC midnight of the world's day 0: `days` days before `now` or a little more, so that the last day has passed too. */
export function worldStart(days: number, now: Date): Date {
  return new Date(Math.floor((now.getTime() - days * DAY_MS) / DAY_MS) * DAY_MS);
}

const sessionStart = (start: Date, session: Session) => new Date(start.getTime() + session.day * DAY_MS + session.minute * 60_000);

/** Sends the sessions with at most `concurrency` in flight, started in time order; counts those on `counted`'s dataset. */
async function sendSessions(client: ServiceClient, sessions: readonly Sending[], concurrency: number, counted: string, sent: Sent): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < sessions.length) {
      const { datasetId, session, startsAt } = sessions[next++]!;
      for (const [i, batch] of session.batches.entries()) {
        const queued = await client.collect(datasetId, batch, session.address, session.userAgent, new Date(startsAt.getTime() + i * BATCH_MS));
        if (datasetId !== counted) continue;
        // awaited first: `sent.queued += await …` would read the total before the wait and lose the other workers' additions
        sent.queued += queued;
        sent.requests += 1;
        sent.events += batch.length;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Declares the networks; the first answer tells whether the service has the operation at all. */
async function declare(client: ServiceClient, declarations: readonly Declaration[], sent: Sent): Promise<void> {
  for (const d of declarations) {
    if (sent.declarationsSupported === false) return;
    const network: DeclaredNetwork = { cidr: d.cidr, organizationName: d.organizationName, organizationDomain: d.organizationDomain };
    const status = await client.declareNetwork(network, sent.declarationsSupported === undefined);
    sent.declarationsSupported = status === 201;
    if (status === 201) sent.declared += 1;
    else sent.declarationStatus = status;
  }
}

/**
 * The world's traffic: declarations of the start, the first half of the days, those of the midway,
 * the rest; `datasetIds`: the measured partner's dataset, then the other partners' (world.others),
 * whose sessions go in time order among its own. `Sent` counts the measured partner's traffic.
 */
export async function drive(client: ServiceClient, world: World, datasetIds: readonly string[], concurrency: number): Promise<Sent> {
  const sent: Sent = { requests: 0, events: 0, queued: 0, declared: 0, declarationsSupported: undefined };
  const traffic = [world.sessions, ...world.others.map((o) => o.sessions)];
  const start = worldStart(world.options.days, new Date());
  const sessions = traffic
    .flatMap((partnerSessions, i) => partnerSessions.map((session) => ({ datasetId: datasetIds[i]!, session, startsAt: sessionStart(start, session) })))
    .sort((a, b) => a.session.day - b.session.day || a.session.minute - b.session.minute); // stable: a partner's own order kept
  const midway = sessions.findIndex((s) => s.session.day >= world.options.days / 2);
  const half = midway < 0 ? sessions.length : midway;
  await declare(client, world.declarations.filter((d) => d.when === "start"), sent);
  await sendSessions(client, sessions.slice(0, half), concurrency, datasetIds[0]!, sent);
  await declare(client, world.declarations.filter((d) => d.when === "midway"), sent);
  await sendSessions(client, sessions.slice(half), concurrency, datasetIds[0]!, sent);
  return sent;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the leads listing says now: every lead's id, name, domain and visit count. */
async function leadsFingerprint(client: ServiceClient, datasetId: string): Promise<string> {
  const leads = await client.leads(datasetId);
  return leads
    .map((l) => `${l.leadId} ${l.visitCount} ${l.organizationName} ${l.organizationDomain ?? ""}`)
    .sort()
    .join("\n");
}

/**
 * Waits until the writer has written everything (GET /metrics: lag 0) and then until the leads
 * listing stays the same for `settleSeconds` (evidence and backfill settle after the writer);
 * false when that did not happen within `boundSeconds`.
 */
export async function waitForDrain(client: ServiceClient, datasetId: string, boundSeconds: number, settleSeconds: number): Promise<boolean> {
  const deadline = Date.now() + boundSeconds * 1000;
  while ((await client.writerLag()) ?? 0) {
    if (Date.now() > deadline) return false;
    await sleep(250);
  }
  let last = await leadsFingerprint(client, datasetId);
  let stableSince = Date.now();
  while (Date.now() - stableSince < settleSeconds * 1000) {
    if (Date.now() > deadline) return false;
    await sleep(1000);
    const now = await leadsFingerprint(client, datasetId);
    const lag = (await client.writerLag()) ?? 0;
    if (now !== last || lag) stableSince = Date.now();
    last = now;
  }
  return true;
}

/** Every lead of the dataset with the URLs of all its visits. */
export async function readBack(client: ServiceClient, datasetId: string): Promise<LeadReadBack[]> {
  const leads = await client.leads(datasetId);
  const read: LeadReadBack[] = [];
  for (const lead of leads) {
    const visits = await client.leadVisits(datasetId, lead.leadId);
    read.push({ leadId: lead.leadId, organizationName: lead.organizationName, organizationDomain: lead.organizationDomain, identitySource: lead.identitySource, visitUrls: visits.map((v) => v.url) });
  }
  return read;
}
