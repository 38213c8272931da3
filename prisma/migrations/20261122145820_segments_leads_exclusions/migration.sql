-- CreateEnum
CREATE TYPE "EmailFrequency" AS ENUM ('instant', 'daily', 'weekly');

-- CreateEnum
CREATE TYPE "ExclusionType" AS ENUM ('use_id', 'organizationName', 'organizationDomain');

-- CreateTable
CREATE TABLE "Segment" (
    "id" SERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "nameKey" TEXT NOT NULL,
    "userId" BIGINT NOT NULL,
    "filters" JSONB NOT NULL,
    "emailEnabled" BOOLEAN NOT NULL DEFAULT false,
    "emailFrequency" "EmailFrequency" NOT NULL DEFAULT 'daily',
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "Segment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SegmentPreference" (
    "accountId" TEXT NOT NULL,
    "userId" BIGINT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "segmentId" INTEGER NOT NULL,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SegmentPreference_pkey" PRIMARY KEY ("userId","datasetId")
);

-- CreateTable
CREATE TABLE "Lead" (
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "organizationName" TEXT NOT NULL,
    "organizationDomain" TEXT,
    "industry" TEXT,
    "employeeCount" INTEGER,
    "country" TEXT,
    "city" TEXT,
    "firstVisitAt" TIMESTAMPTZ(3) NOT NULL,
    "lastVisitAt" TIMESTAMPTZ(3) NOT NULL,
    "visitCount" INTEGER NOT NULL DEFAULT 1,
    "tags" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "assigneeUserId" BIGINT,

    CONSTRAINT "Lead_pkey" PRIMARY KEY ("datasetId","id")
);

-- CreateTable
CREATE TABLE "DatasetExclusion" (
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "type" "ExclusionType" NOT NULL,
    "value" TEXT NOT NULL,
    "valueKey" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DatasetExclusion_pkey" PRIMARY KEY ("datasetId","type","valueKey")
);

-- CreateIndex
CREATE INDEX "Segment_accountId_userId_idx" ON "Segment"("accountId", "userId");

-- CreateIndex
CREATE UNIQUE INDEX "Segment_datasetId_nameKey_key" ON "Segment"("datasetId", "nameKey");

-- CreateIndex
CREATE UNIQUE INDEX "Segment_datasetId_id_key" ON "Segment"("datasetId", "id");

-- CreateIndex
CREATE INDEX "SegmentPreference_datasetId_segmentId_idx" ON "SegmentPreference"("datasetId", "segmentId");

-- CreateIndex
CREATE INDEX "Lead_datasetId_lastVisitAt_id_idx" ON "Lead"("datasetId", "lastVisitAt" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "Lead_tags_idx" ON "Lead" USING GIN ("tags");

-- CreateIndex
CREATE INDEX "Lead_accountId_assigneeUserId_idx" ON "Lead"("accountId", "assigneeUserId");

-- AddForeignKey
ALTER TABLE "Segment" ADD CONSTRAINT "Segment_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Segment" ADD CONSTRAINT "Segment_accountId_userId_fkey" FOREIGN KEY ("accountId", "userId") REFERENCES "Membership"("accountId", "userId") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SegmentPreference" ADD CONSTRAINT "SegmentPreference_datasetId_segmentId_fkey" FOREIGN KEY ("datasetId", "segmentId") REFERENCES "Segment"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SegmentPreference" ADD CONSTRAINT "SegmentPreference_accountId_userId_fkey" FOREIGN KEY ("accountId", "userId") REFERENCES "Membership"("accountId", "userId") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SegmentPreference" ADD CONSTRAINT "SegmentPreference_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Lead" ADD CONSTRAINT "Lead_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Lead" ADD CONSTRAINT "Lead_accountId_assigneeUserId_fkey" FOREIGN KEY ("accountId", "assigneeUserId") REFERENCES "Membership"("accountId", "userId") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DatasetExclusion" ADD CONSTRAINT "DatasetExclusion_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Added by hand (Prisma's schema language has no CHECK constraints): a lead has at most 100 tags.
ALTER TABLE "Lead" ADD CONSTRAINT "Lead_tags_count_check" CHECK (cardinality("tags") <= 100);
