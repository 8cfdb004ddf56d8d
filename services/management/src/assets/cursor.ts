/**
 * The keyset-pagination cursor of the asset listing: an opaque base64url JSON of the sort, the
 * last row's sort value and its id, and the SQL order and filter for "rows after it".
 */
import { MAX_TITLE_LENGTH, type AssetSort } from "@media-platform/contracts";
import { Prisma, type Asset } from "../generated/prisma/client";
import { InvalidInputError } from "../domain-errors";

export type SortField = "createdAt" | "updatedAt" | "userTitle" | "bytes";
export interface Cursor {
  s: AssetSort;
  v: string | null;
  id: string;
}

export const encodeCursor = (c: Cursor): string => Buffer.from(JSON.stringify(c), "utf8").toString("base64url");

const CURSOR_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MAX_BIGINT = 2n ** 63n - 1n;

/** Is `v` a value this sort field could have produced (so the database can never choke on it)? */
function validCursorValue(field: SortField, v: string): boolean {
  switch (field) {
    case "createdAt":
    case "updatedAt": {
      // Exactly what toISOString() wrote: no expanded years, no other formats.
      const ms = Date.parse(v);
      return /^[0-9]{4}-/.test(v) && !Number.isNaN(ms) && new Date(ms).toISOString() === v;
    }
    case "bytes":
      return /^[0-9]{1,19}$/.test(v) && BigInt(v) <= MAX_BIGINT;
    case "userTitle":
      // eslint-disable-next-line no-control-regex
      return v.length <= MAX_TITLE_LENGTH && !/[\u0000]|\p{Cs}/u.test(v);
  }
}

export function decodeCursor(raw: string, sort: AssetSort): Cursor {
  const invalid = () =>
    new InvalidInputError("Invalid cursor", [{ path: "query.cursor", message: "not a cursor of this listing" }]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  if (typeof parsed !== "object" || parsed === null) throw invalid();
  const c = parsed as Record<string, unknown>;
  if (c.s !== sort || typeof c.id !== "string" || !CURSOR_ID.test(c.id)) throw invalid();
  if (!(c.v === null || typeof c.v === "string")) throw invalid();
  const field = sort.replace(/^-/, "") as SortField;
  if (c.v === null && field !== "userTitle") throw invalid();
  if (typeof c.v === "string" && !validCursorValue(field, c.v)) throw invalid();
  return { s: sort, v: c.v, id: c.id };
}

export function cursorValue(asset: Asset, field: SortField): string | null {
  switch (field) {
    case "createdAt":
      return asset.createdAt.toISOString();
    case "updatedAt":
      return asset.updatedAt.toISOString();
    case "bytes":
      return asset.bytes.toString();
    case "userTitle":
      return asset.userTitle;
  }
}

/** The column of each sort field and the SQL type its cursor value (text) is read as. */
const SORT_COLUMNS: Record<SortField, { column: string; type: string }> = {
  createdAt: { column: "created_at", type: "timestamptz" },
  updatedAt: { column: "updated_at", type: "timestamptz" },
  userTitle: { column: "user_title", type: "text" },
  bytes: { column: "bytes", type: "bigint" },
};

/** The listing's order: the sort field, then id in the same direction; titles sort nulls last. */
export function listOrder(field: SortField, desc: boolean): Prisma.Sql {
  const dir = desc ? "DESC" : "ASC";
  const nulls = field === "userTitle" ? " NULLS LAST" : "";
  return Prisma.raw(`${SORT_COLUMNS[field].column} ${dir}${nulls}, id ${dir}`);
}

/** Rows strictly after the cursor in listOrder(field, desc); userTitle sorts nulls last. */
export function afterCursor(field: SortField, desc: boolean, cursor: Cursor): Prisma.Sql {
  const cmp = Prisma.raw(desc ? "<" : ">");
  const idAfter = Prisma.sql`id ${cmp} ${cursor.id}::uuid`;
  if (cursor.v === null) return Prisma.sql`(user_title IS NULL AND ${idAfter})`;
  const { column, type } = SORT_COLUMNS[field];
  const col = Prisma.raw(column);
  const value = Prisma.sql`${cursor.v}::${Prisma.raw(type)}`;
  const nullsAfter = field === "userTitle" ? Prisma.sql` OR user_title IS NULL` : Prisma.empty;
  return Prisma.sql`(${col} ${cmp} ${value} OR (${col} = ${value} AND ${idAfter})${nullsAfter})`;
}
