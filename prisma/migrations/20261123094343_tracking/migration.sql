-- CreateEnum
CREATE TYPE "EnrichmentState" AS ENUM ('pending', 'enriched', 'not_found', 'no_credit');

-- CreateTable
CREATE TABLE "IngestEvent" (
    "id" BIGSERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "receivedAt" TIMESTAMPTZ(3) NOT NULL,
    "event" JSONB NOT NULL,

    CONSTRAINT "IngestEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Visitor" (
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "leadId" TEXT,
    "email" TEXT,
    "enrichment" "EnrichmentState",
    "firstSeenAt" TIMESTAMPTZ(3) NOT NULL,
    "lastSeenAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Visitor_pkey" PRIMARY KEY ("datasetId","id")
);

-- CreateTable
CREATE TABLE "Visit" (
    "id" BIGSERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "leadId" TEXT NOT NULL,
    "visitorId" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "url" TEXT NOT NULL,
    "referrer" TEXT,
    "title" TEXT,
    "utmSource" TEXT,
    "utmMedium" TEXT,
    "utmCampaign" TEXT,
    "utmTerm" TEXT,
    "utmContent" TEXT,
    "ip" TEXT,
    "asn" INTEGER,
    "networkType" TEXT NOT NULL,
    "country" TEXT,
    "city" TEXT,

    CONSTRAINT "Visit_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FormSubmission" (
    "id" BIGSERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "visitorId" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "url" TEXT NOT NULL,
    "partial" BOOLEAN NOT NULL,
    "fields" JSONB NOT NULL,

    CONSTRAINT "FormSubmission_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Visitor_enrichment_idx" ON "Visitor"("enrichment");

-- CreateIndex
CREATE INDEX "Visit_datasetId_leadId_at_id_idx" ON "Visit"("datasetId", "leadId", "at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "Visit_datasetId_visitorId_idx" ON "Visit"("datasetId", "visitorId");

-- CreateIndex
CREATE INDEX "FormSubmission_datasetId_visitorId_idx" ON "FormSubmission"("datasetId", "visitorId");

-- AddForeignKey
ALTER TABLE "IngestEvent" ADD CONSTRAINT "IngestEvent_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Visitor" ADD CONSTRAINT "Visitor_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Visit" ADD CONSTRAINT "Visit_datasetId_leadId_fkey" FOREIGN KEY ("datasetId", "leadId") REFERENCES "Lead"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Visit" ADD CONSTRAINT "Visit_datasetId_visitorId_fkey" FOREIGN KEY ("datasetId", "visitorId") REFERENCES "Visitor"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FormSubmission" ADD CONSTRAINT "FormSubmission_datasetId_visitorId_fkey" FOREIGN KEY ("datasetId", "visitorId") REFERENCES "Visitor"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;
