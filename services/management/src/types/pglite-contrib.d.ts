// moduleResolution node10 ignores package "exports", so the contrib subpath has no types; this
// mirrors node_modules/@electric-sql/pglite/dist/contrib/pg_trgm.d.ts.
declare module "@electric-sql/pglite/contrib/pg_trgm" {
  import type { Extension } from "@electric-sql/pglite";
  export const pg_trgm: Extension;
}
