-- CreateTable
CREATE TABLE "IngestedBatch" (
    "id" TEXT NOT NULL,
    "writtenAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "acknowledgedAt" TIMESTAMPTZ(3),

    CONSTRAINT "IngestedBatch_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "IngestedBatch_writtenAt_idx" ON "IngestedBatch"("writtenAt");
