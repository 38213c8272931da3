-- CreateEnum
CREATE TYPE "DomainSource" AS ENUM ('curated', 'email', 'reverse_dns');

-- AlterTable
ALTER TABLE "Dataset" ADD COLUMN     "pageWeights" JSONB NOT NULL DEFAULT '[]';

-- AlterTable
ALTER TABLE "FormSubmission" ADD COLUMN     "leadId" TEXT;

-- AlterTable
ALTER TABLE "Lead" ADD COLUMN     "domainSource" "DomainSource";

-- CreateTable
CREATE TABLE "LeadPage" (
    "datasetId" TEXT NOT NULL,
    "leadId" TEXT NOT NULL,
    "path" TEXT NOT NULL,

    CONSTRAINT "LeadPage_pkey" PRIMARY KEY ("datasetId","leadId","path")
);

-- CreateTable
CREATE TABLE "ReverseDnsEntry" (
    "prefix" TEXT NOT NULL,
    "host" TEXT,
    "domain" TEXT,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ReverseDnsEntry_pkey" PRIMARY KEY ("prefix")
);

-- CreateIndex
CREATE INDEX "ReverseDnsEntry_domain_idx" ON "ReverseDnsEntry"("domain");

-- CreateIndex
CREATE INDEX "FormSubmission_datasetId_leadId_idx" ON "FormSubmission"("datasetId", "leadId");

-- CreateIndex
CREATE INDEX "Visitor_datasetId_leadId_idx" ON "Visitor"("datasetId", "leadId");

-- AddForeignKey
ALTER TABLE "LeadPage" ADD CONSTRAINT "LeadPage_datasetId_leadId_fkey" FOREIGN KEY ("datasetId", "leadId") REFERENCES "Lead"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Backfill: until now every lead domain came from the curated list. Forms take the lead of their
-- visitor. The distinct pages of past visits.
UPDATE "Lead" SET "domainSource" = 'curated' WHERE "organizationDomain" IS NOT NULL;
UPDATE "FormSubmission" f SET "leadId" = v."leadId" FROM "Visitor" v WHERE v."datasetId" = f."datasetId" AND v.id = f."visitorId";
INSERT INTO "LeadPage" ("datasetId", "leadId", "path")
SELECT DISTINCT "datasetId", "leadId",
       left(COALESCE(NULLIF(rtrim(lower(substring(url FROM '^(?:[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*)?([^?#]*)')), '/'), ''), '/'), 512)
FROM "Visit"
ON CONFLICT DO NOTHING;
