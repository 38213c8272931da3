-- AlterEnum
ALTER TYPE "IdentityEvidenceKind" ADD VALUE 'business_line';
