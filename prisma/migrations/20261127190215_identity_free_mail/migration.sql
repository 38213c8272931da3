-- AlterEnum
ALTER TYPE "IdentityEvidenceKind" ADD VALUE 'free_mail';
