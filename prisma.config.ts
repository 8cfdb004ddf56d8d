import { defineConfig } from "prisma/config";

// Prisma 7 keeps connection settings out of the schema. Migrations are applied by our own
// runner (services/management/src/db/migrate.ts), so only the schema path is needed here.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
});
