import { z } from "zod";

/**
 * What the media service reports of its work, per asset and UTC day: renditions computed and
 * bytes sent. Each replica buffers counts in memory and writes them as a blob
 * `usage-reports/<replica>-<time>-<seq>.json`; the management service counts each report once
 * (per workspace, by the asset's owner) and deletes it.
 */
export const USAGE_REPORT_PREFIX = "usage-reports";

export const usageReportSchema = z.object({
  version: z.literal(1),
  /** day (YYYY-MM-DD) -> asset id -> [renders, egressBytes] */
  days: z.record(
    z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
    z.record(z.string(), z.tuple([z.number().int().min(0), z.number().int().min(0)])),
  ),
});
export type UsageReport = z.infer<typeof usageReportSchema>;
