-- The host-domain rule reads every account's forms at a PTR domain's units (server/identity/identities.ts hostDomainsOf).
CREATE INDEX "IdentityEvidence_unit_idx" ON "IdentityEvidence"("unit");
