-- AlterTable
ALTER TABLE "Invitation" ADD COLUMN     "acceptedAt" TIMESTAMPTZ(3),
ADD COLUMN     "expiresAt" TIMESTAMPTZ(3),
ADD COLUMN     "revokedAt" TIMESTAMPTZ(3),
ADD COLUMN     "tokenHash" TEXT;

-- CreateTable
CREATE TABLE "SegmentEntry" (
    "segmentId" INTEGER NOT NULL,
    "datasetId" TEXT NOT NULL,
    "leadId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "enteredAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SegmentEntry_pkey" PRIMARY KEY ("segmentId","leadId")
);

-- CreateIndex
CREATE INDEX "SegmentEntry_segmentId_enteredAt_idx" ON "SegmentEntry"("segmentId", "enteredAt");

-- CreateIndex
CREATE INDEX "SegmentEntry_datasetId_leadId_idx" ON "SegmentEntry"("datasetId", "leadId");

-- CreateIndex
CREATE UNIQUE INDEX "Invitation_tokenHash_key" ON "Invitation"("tokenHash");

-- AddForeignKey
ALTER TABLE "SegmentEntry" ADD CONSTRAINT "SegmentEntry_datasetId_segmentId_fkey" FOREIGN KEY ("datasetId", "segmentId") REFERENCES "Segment"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SegmentEntry" ADD CONSTRAINT "SegmentEntry_datasetId_leadId_fkey" FOREIGN KEY ("datasetId", "leadId") REFERENCES "Lead"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;
