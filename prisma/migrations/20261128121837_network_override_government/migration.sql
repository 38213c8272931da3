-- AlterEnum
ALTER TYPE "NetworkOverrideType" ADD VALUE 'government';
