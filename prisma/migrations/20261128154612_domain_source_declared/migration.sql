-- AlterEnum
ALTER TYPE "DomainSource" ADD VALUE 'declared';
