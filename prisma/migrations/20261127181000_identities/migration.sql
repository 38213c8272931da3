-- CreateEnum
CREATE TYPE "IdentitySource" AS ENUM ('network', 'reverse_dns', 'form_email', 'declared');

-- CreateEnum
CREATE TYPE "IdentityEvidenceKind" AS ENUM ('form_email', 'reverse_dns', 'dynamic_line');

-- CreateEnum
CREATE TYPE "IdentityGuard" AS ENUM ('shared', 'dynamic_line', 'dynamic_range', 'moving_person', 'network_type');

-- AlterTable
ALTER TABLE "Lead" ADD COLUMN     "identityConfidence" DOUBLE PRECISION NOT NULL DEFAULT 1,
ADD COLUMN     "identitySource" "IdentitySource" NOT NULL DEFAULT 'network';

-- CreateTable
CREATE TABLE "DeclaredNetwork" (
    "id" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "network" INET NOT NULL,
    "organizationName" TEXT NOT NULL,
    "organizationDomain" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DeclaredNetwork_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "IdentityEvidence" (
    "id" BIGSERIAL NOT NULL,
    "scope" TEXT NOT NULL,
    "accountId" TEXT,
    "range" TEXT NOT NULL,
    "unit" TEXT NOT NULL,
    "kind" "IdentityEvidenceKind" NOT NULL,
    "domain" TEXT NOT NULL DEFAULT '',
    "contributor" TEXT NOT NULL DEFAULT '',
    "firstSeenAt" TIMESTAMPTZ(3) NOT NULL,
    "lastSeenAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "IdentityEvidence_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NetworkIdentity" (
    "scope" TEXT NOT NULL,
    "accountId" TEXT,
    "prefix" TEXT NOT NULL,
    "range" TEXT NOT NULL,
    "organizationDomain" TEXT,
    "organizationName" TEXT,
    "source" "IdentitySource",
    "confidence" DOUBLE PRECISION NOT NULL,
    "guard" "IdentityGuard",
    "shared" BOOLEAN NOT NULL,
    "reverseDns" INTEGER NOT NULL,
    "formEmail" INTEGER NOT NULL,
    "organizations" INTEGER NOT NULL,
    "firstSeenAt" TIMESTAMPTZ(3) NOT NULL,
    "lastSeenAt" TIMESTAMPTZ(3) NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "NetworkIdentity_pkey" PRIMARY KEY ("scope","prefix")
);

-- CreateIndex
CREATE INDEX "DeclaredNetwork_accountId_createdAt_id_idx" ON "DeclaredNetwork"("accountId", "createdAt", "id");

-- CreateIndex
CREATE INDEX "DeclaredNetwork_network_idx" ON "DeclaredNetwork" USING GIST ("network" inet_ops);

-- CreateIndex
CREATE UNIQUE INDEX "DeclaredNetwork_accountId_network_key" ON "DeclaredNetwork"("accountId", "network");

-- CreateIndex
CREATE INDEX "IdentityEvidence_scope_range_idx" ON "IdentityEvidence"("scope", "range");

-- CreateIndex
CREATE INDEX "IdentityEvidence_scope_contributor_idx" ON "IdentityEvidence"("scope", "contributor");

-- CreateIndex
CREATE INDEX "IdentityEvidence_kind_domain_idx" ON "IdentityEvidence"("kind", "domain");

-- CreateIndex
CREATE INDEX "IdentityEvidence_lastSeenAt_idx" ON "IdentityEvidence"("lastSeenAt");

-- CreateIndex
CREATE UNIQUE INDEX "IdentityEvidence_scope_unit_kind_domain_contributor_key" ON "IdentityEvidence"("scope", "unit", "kind", "domain", "contributor");

-- CreateIndex
CREATE INDEX "NetworkIdentity_scope_range_idx" ON "NetworkIdentity"("scope", "range");

-- CreateIndex
CREATE INDEX "NetworkIdentity_expiresAt_idx" ON "NetworkIdentity"("expiresAt");

-- CreateIndex
CREATE INDEX "NetworkIdentity_organizationDomain_idx" ON "NetworkIdentity"("organizationDomain");

-- AddForeignKey
ALTER TABLE "DeclaredNetwork" ADD CONSTRAINT "DeclaredNetwork_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "Account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "IdentityEvidence" ADD CONSTRAINT "IdentityEvidence_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "Account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "NetworkIdentity" ADD CONSTRAINT "NetworkIdentity_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "Account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Rules schema.prisma cannot state (Prisma's diff does not read CHECK constraints): a scope is its
-- account, or "*" for reverse DNS pooled across accounts. Confidences lie in 0..1.
ALTER TABLE "IdentityEvidence" ADD CONSTRAINT "IdentityEvidence_scope_check" CHECK (scope = coalesce("accountId", '*'));
ALTER TABLE "NetworkIdentity" ADD CONSTRAINT "NetworkIdentity_scope_check" CHECK (scope = coalesce("accountId", '*'));
ALTER TABLE "NetworkIdentity" ADD CONSTRAINT "NetworkIdentity_confidence_check" CHECK (confidence BETWEEN 0 AND 1);
ALTER TABLE "Lead" ADD CONSTRAINT "Lead_identityConfidence_check" CHECK ("identityConfidence" BETWEEN 0 AND 1);
