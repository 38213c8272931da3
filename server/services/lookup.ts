// Lookup API: a contact's profile by e-mail, paid in credits only when a profile is found.
import type { ContactProfile } from "../contacts/profile.ts";
import { NotFound, PaymentRequired, revive, type StoredDomainError, storedFormOf } from "../domain/errors.ts";
import { contactQuery, type ContactRow, toProfile } from "./contacts.ts";
import { type ChargeHook, type CreditService } from "./credits.ts";
import { fingerprint, type IdempotencyService, type KeyClaim } from "./idempotency.ts";
import type { Schemas } from "../domain/types.ts";
import { contradictedHint } from "./lookup-hints.ts";

/** The dataset that pays; undefined: the account's oldest dataset with credit left. */
export type LookupRequest = Schemas["ContactEnrichmentRequest"] & { datasetId?: Schemas["DatasetId"] };

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

export function lookupService(deps: { credits: CreditService; idempotency: IdempotencyService; now: () => Date }) {
  const { credits, idempotency, now } = deps;
  let lastPurge = 0;

  /**
   * Credit first (a partner without credit learns so even for a miss) and the profile, read in
   * one round trip; then the charge, one statement.
   */
  async function lookup(caller: Caller, request: LookupRequest, answerHook?: (profile: ContactProfile) => ChargeHook) {
    const { email, datasetId, ...hints } = request;
    const row = await credits.requireCredit<ContactRow>(caller.accountId, datasetId, now(), contactQuery(email));
    const profile = row && toProfile(row);
    if (!profile || contradictedHint(profile, hints)) throw miss();
    await credits.charge({ ...caller, datasetId, at: now(), hook: answerHook?.(profile) });
    return profile;
  }

  /** Runs the lookup as the key's owner: its answer is stored (a charged one in the charge's own statement). */
  async function lookupOnce(caller: Caller, request: LookupRequest, claim: KeyClaim): Promise<ContactProfile> {
    try {
      return await lookup(caller, request, (profile) => idempotency.storeWithCharge(claim, { status: 200, body: profile }));
    } catch (error) {
      if (error instanceof NotFound || error instanceof PaymentRequired) {
        await idempotency.store(claim, { status: REFUSED, body: storedFormOf(error) });
      } else {
        await idempotency.release(claim).catch(() => {});
      }
      throw error;
    }
  }

  return {
    lookup: (caller: Caller, request: LookupRequest) => lookup(caller, request),

    /**
     * The lookup under an Idempotency-Key: the first request with the key runs, a retry with the
     * same request gets the first answer again (nothing more is charged), another request 409.
     */
    async lookupIdempotent(caller: Caller, request: LookupRequest, key: string): Promise<ContactProfile> {
      if (Date.now() - lastPurge > PURGE_EVERY_MS) {
        lastPurge = Date.now();
        await idempotency.purgeExpired();
      }
      const { datasetId, ...body } = request;
      const print = fingerprint(caller.operation, { datasetId }, body);
      const claimed = await idempotency.claim(caller.accountId, key, print);
      if ("claim" in claimed) return lookupOnce(caller, request, claimed.claim);
      if (claimed.replay.status === 200) return claimed.replay.body as ContactProfile;
      throw revive(claimed.replay.body as StoredDomainError);
    },
  };
}

export type LookupService = ReturnType<typeof lookupService>;
