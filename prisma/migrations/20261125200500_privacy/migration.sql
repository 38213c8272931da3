-- CreateEnum
CREATE TYPE "ConsentMode" AS ENUM ('none', 'required', 'cookieless');

-- AlterTable
ALTER TABLE "Dataset" ADD COLUMN     "consentMode" "ConsentMode" NOT NULL DEFAULT 'none',
ADD COLUMN     "respectDoNotTrack" BOOLEAN NOT NULL DEFAULT true,
ADD COLUMN     "retentionDays" INTEGER;

-- CreateTable
CREATE TABLE "PrivacyErasure" (
    "id" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT,
    "subjectType" TEXT NOT NULL,
    "actorUserId" BIGINT NOT NULL,
    "requestedAt" TIMESTAMPTZ(3) NOT NULL,
    "counts" JSONB NOT NULL,

    CONSTRAINT "PrivacyErasure_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "VisitorSalt" (
    "day" DATE NOT NULL,
    "salt" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "VisitorSalt_pkey" PRIMARY KEY ("day")
);

-- CreateIndex
CREATE INDEX "PrivacyErasure_accountId_requestedAt_id_idx" ON "PrivacyErasure"("accountId", "requestedAt" DESC, "id" DESC);

-- AddForeignKey
ALTER TABLE "PrivacyErasure" ADD CONSTRAINT "PrivacyErasure_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "Account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Rules the schema language cannot state: what the API accepts, also for writes from elsewhere.
ALTER TABLE "Dataset" ADD CONSTRAINT "Dataset_retentionDays_check" CHECK ("retentionDays" BETWEEN 1 AND 3650);
ALTER TABLE "PrivacyErasure" ADD CONSTRAINT "PrivacyErasure_subjectType_check" CHECK ("subjectType" IN ('visitor', 'person'));
