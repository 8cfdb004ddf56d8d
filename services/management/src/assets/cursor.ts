/**
 * The keyset-pagination cursor of the asset listing: an opaque base64url JSON of the sort, the
 * last row's sort value and its id, and the Prisma filter for "rows after it".
 */
import { MAX_TITLE_LENGTH, type AssetSort } from "@media-platform/contracts";
import { Prisma, type Asset } from "../generated/prisma/client";
import { badRequest } from "../problem";

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
    badRequest("Invalid cursor", [{ path: "query.cursor", message: "not a cursor of this listing" }]);
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

function typedValue(field: SortField, v: string): Date | bigint | string {
  if (field === "createdAt" || field === "updatedAt") return new Date(v);
  if (field === "bytes") return BigInt(v);
  return v;
}

/** Rows strictly after the cursor in (field dir, id dir) order; userTitle sorts nulls last. */
export function afterCursor(field: SortField, desc: boolean, cursor: Cursor): Prisma.AssetWhereInput {
  const cmp = desc ? "lt" : "gt";
  const idAfter = { id: { [cmp]: cursor.id } };
  if (cursor.v === null) return { AND: [{ userTitle: null }, idAfter] };
  const value = typedValue(field, cursor.v);
  const or: Prisma.AssetWhereInput[] = [
    { [field]: { [cmp]: value } },
    { AND: [{ [field]: { equals: value } }, idAfter] },
  ];
  if (field === "userTitle") or.push({ userTitle: null });
  return { OR: or };
}
