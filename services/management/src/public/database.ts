/**
 * The public surface of `@media-platform/management/database`: opening the service's database
 * (Postgres or PGlite), migrating it with the service's own runner, and Prisma's SQL template
 * namespace for queries on it. The benches rely on these names only; everything else under src/
 * is internal.
 */
export { openDatabase, createPGlite, type Database, type DatabaseOptions, type PrismaClient } from "../db/client";
export { migrate } from "../db/migrate";
export { Prisma } from "../generated/prisma/client";
