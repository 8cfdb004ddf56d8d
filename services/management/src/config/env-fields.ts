import { z } from "zod";

/** Fields of the management env shared by its parts (config/lifecycle.ts, config/webhooks.ts). */
export const blankToUndefined = (v: string | undefined) => (v === undefined || v.trim() === "" ? undefined : v);
export const urlList = z
  .string()
  .optional()
  .transform(blankToUndefined)
  .transform((v) => (v ? v.split(",").map((u) => u.trim().replace(/\/+$/, "")) : []))
  .refine(
    (urls) => urls.every((u) => /^https?:\/\/[^\s]+$/.test(u) && URL.canParse(u)),
    "must be http(s) URLs, comma-separated",
  );
