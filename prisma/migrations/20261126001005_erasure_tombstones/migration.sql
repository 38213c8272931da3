-- CreateTable
CREATE TABLE "ErasureTombstone" (
    "id" BIGSERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT,
    "kind" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "erasedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ErasureTombstone_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ErasureKey" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "key" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ErasureKey_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ErasureTombstone_accountId_erasedAt_idx" ON "ErasureTombstone"("accountId", "erasedAt");

-- CreateIndex
CREATE INDEX "ErasureTombstone_erasedAt_idx" ON "ErasureTombstone"("erasedAt");
