// `prisma dev` is the only command that imports this package; the project never runs it.
export async function startLocalDurableStreamsServer() {
  throw new Error("`prisma dev` is not available in this project (its @prisma/streams-local needs Node >= 22)");
}
