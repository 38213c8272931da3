// Lookup API: a contact's profile by e-mail, paid in credits only when a profile is found.
import type { ContactProfile } from "../contacts/profile.ts";
import { NotFound, PaymentRequired, revive, type StoredDomainError, storedFormOf } from "../domain/errors.ts";
import { fullFormats } from "ajv-formats/dist/formats.js";
import { normaliseEmail } from "../ids.ts";
import type { Db, Sql } from "../db/database.ts";
import * as contacts from "./contacts.ts";
import { contactQuery, type ContactRow, toProfile } from "./contacts.ts";
import * as credits from "./credits.ts";
import * as idempotency from "./idempotency.ts";
import { fingerprint, type IdempotentAnswer, type KeyClaim, storedWithCharge } from "./idempotency.ts";
import type { Schemas } from "../domain/types.ts";
import { contradictedHint } from "./lookup-hints.ts";

/** The dataset that pays; undefined: the account's oldest dataset with credit left. */
export type LookupRequest = Schemas["ContactEnrichmentRequest"] & { datasetId?: Schemas["DatasetId"] };
export type BulkLookupRequest = Schemas["BulkLookupRequest"] & { datasetId?: Schemas["DatasetId"] };
export type BulkLookupAnswer = Schemas["BulkLookupResponse"];
type BulkResult = Schemas["BulkLookupResult"];

/** The contract's `format: email` (ajv-formats, as the validator applies it to single look-ups). */
const emailFormat = fullFormats.email as RegExp;

/**
 * Each item's result before charging: `found` (with the profile) for an address's first matching
 * item, which will be charged; `found` and never charged for a repeat of it.
 */
function matchItems(items: BulkLookupRequest["items"], profiles: Map<string, ContactProfile>) {
  const seen = new Set<string>();
  return items.map(({ email, ...hints }) => {
    if (!emailFormat.test(email.trim())) return { status: "invalid" as const, charged: false, error: "must be an e-mail address" };
    const address = normaliseEmail(email);
    const profile = profiles.get(address);
    if (!profile || contradictedHint(profile, hints)) return { status: "not_found" as const, charged: false };
    const first = !seen.has(address);
    seen.add(address);
    return { status: "found" as const, charged: first, profile };
  });
}

/** The first `credits` chargeable items keep their profile; the later ones are `no_credit`. */
function settle(matches: ReturnType<typeof matchItems>, charged: { datasetId: string | null; credits: number }): BulkLookupAnswer {
  let left = charged.credits;
  const results: BulkResult[] = matches.map((match) => {
    if (match.status !== "found" || !match.charged) return match;
    if (left === 0) return { status: "no_credit", charged: false };
    left -= 1;
    return match;
  });
  return { results, charged: charged.credits, datasetId: charged.datasetId };
}

export interface Caller {
  accountId: string;
  keyId: string;
  /** The operationId, written to the ledger. */
  operation: string;
}

const PURGE_EVERY_MS = 3_600_000;

const miss = () => new NotFound("No profile was found for this e-mail address and hints", "profile_not_found");

/** A stored answer: the profile (status 200), or the domain error the first request ended in. */
const REFUSED = 0;

/** `hotSql` runs the credit check and the charge on the driver (the hot path); `db` the rest. */
export interface LookupDeps {
  db: Db;
  hotSql: Sql;
  now: () => Date;
  /** When this process last purged expired idempotency keys (createServices makes it once). */
  idempotencyPurge: { lastAt: number };
}

/**
 * Credit first (a partner without credit learns so even for a miss) and the profile, read in
 * one round trip; then the charge, one statement.
 */
export async function lookup(deps: LookupDeps, caller: Caller, request: LookupRequest, answerOf?: (profile: ContactProfile) => IdempotentAnswer) {
  const { now } = deps;
  const { email, datasetId, ...hints } = request;
  const row = await credits.requireCredit<ContactRow>(deps, caller.accountId, datasetId, now(), contactQuery(email));
  const profile = row && toProfile(row);
  if (!profile || contradictedHint(profile, hints)) throw miss();
  await credits.charge(deps, { ...caller, datasetId, at: now(), hook: answerOf && storedWithCharge(answerOf(profile)) });
  return profile;
}

/** A refused look-up's answer is stored under its key (a retry gets it again); any other failure frees the key. */
async function settleRefusal(deps: LookupDeps, claim: KeyClaim, error: unknown): Promise<void> {
  if (error instanceof NotFound || error instanceof PaymentRequired) {
    await idempotency.store(deps, claim, { status: REFUSED, body: storedFormOf(error) });
  } else {
    await idempotency.release(deps, claim).catch(() => {});
  }
}

/** Runs the lookup as the key's owner: its answer is stored (a charged one in the charge's own statement). */
async function lookupOnce(deps: LookupDeps, caller: Caller, request: LookupRequest, claim: KeyClaim): Promise<ContactProfile> {
  try {
    return await lookup(deps, caller, request, (profile) => ({ ...claim, status: 200, body: profile }));
  } catch (error) {
    await settleRefusal(deps, claim, error);
    throw error;
  }
}

/**
 * Credit first (402 when none is left, as for one look-up), the profiles in one query, then one
 * charge for every address found, up to the credit left; `claim` stores the answer with it.
 */
export async function bulkLookup(deps: LookupDeps, caller: Caller, request: BulkLookupRequest, claim?: KeyClaim): Promise<BulkLookupAnswer> {
  const { now } = deps;
  const { items, datasetId } = request;
  await credits.requireCredit(deps, caller.accountId, datasetId, now());
  const matches = matchItems(items, await contacts.findMany(deps, items.map((item) => normaliseEmail(item.email))));
  const wanted = matches.filter((match) => match.status === "found" && match.charged).length;
  const charge = { ...caller, datasetId, at: now(), credits: wanted };
  const hooks = claim && idempotency.storeWithBulkCharge(claim, (charged) => ({ status: 200, body: settle(matches, charged) }));
  return settle(matches, await credits.chargeUpTo(deps, charge, hooks));
}

/** Purges expired keys at most once an hour, then claims `key` for this request. */
async function claimKey(deps: LookupDeps, caller: Caller, key: string, print: string) {
  const { idempotencyPurge } = deps;
  if (Date.now() - idempotencyPurge.lastAt > PURGE_EVERY_MS) {
    idempotencyPurge.lastAt = Date.now();
    await idempotency.purgeExpired(deps);
  }
  return idempotency.claim(deps, caller.accountId, key, print);
}

/**
 * The lookup under an Idempotency-Key: the first request with the key runs, a retry with the
 * same request gets the first answer again (nothing more is charged), another request 409.
 */
export async function lookupIdempotent(deps: LookupDeps, caller: Caller, request: LookupRequest, key: string): Promise<ContactProfile> {
  const { datasetId, ...body } = request;
  const claimed = await claimKey(deps, caller, key, fingerprint(caller.operation, { datasetId }, body));
  if ("claim" in claimed) return lookupOnce(deps, caller, request, claimed.claim);
  if (claimed.replay.status === 200) return claimed.replay.body as ContactProfile;
  throw revive(claimed.replay.body as StoredDomainError);
}

/** The bulk look-up under one Idempotency-Key for the whole request (as `lookupIdempotent`). */
export async function bulkLookupIdempotent(deps: LookupDeps, caller: Caller, request: BulkLookupRequest, key: string): Promise<BulkLookupAnswer> {
  const { datasetId, ...body } = request;
  const claimed = await claimKey(deps, caller, key, fingerprint(caller.operation, { datasetId }, body));
  if ("replay" in claimed) {
    if (claimed.replay.status === 200) return claimed.replay.body as BulkLookupAnswer;
    throw revive(claimed.replay.body as StoredDomainError);
  }
  try {
    return await bulkLookup(deps, caller, request, claimed.claim);
  } catch (error) {
    await settleRefusal(deps, claimed.claim, error);
    throw error;
  }
}
