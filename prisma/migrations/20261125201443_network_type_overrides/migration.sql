-- CreateEnum
CREATE TYPE "NetworkOverrideType" AS ENUM ('business', 'isp', 'hosting', 'mobile', 'education');

-- CreateTable
CREATE TABLE "NetworkTypeOverride" (
    "asn" INTEGER NOT NULL,
    "type" "NetworkOverrideType" NOT NULL,
    "note" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "NetworkTypeOverride_pkey" PRIMARY KEY ("asn")
);
