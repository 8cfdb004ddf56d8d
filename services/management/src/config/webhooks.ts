import { MIN_SECRET_BYTES } from "@media-platform/storage";
import { z } from "zod";
import { blankToUndefined, urlList } from "./env-fields";

/** Environment of webhook delivery (webhooks/dispatcher.ts); merged into the management env schema. */
export const webhookEnvShape = {
  WEBHOOK_URLS: urlList.describe("Comma-separated endpoints that receive every webhook event; unset = no webhooks"),
  WEBHOOK_SECRET: z
    .string()
    .optional()
    .transform(blankToUndefined)
    .refine(
      (v) =>
        v === undefined ||
        (/^(whsec_)?[A-Za-z0-9+/]+={0,2}$/.test(v) &&
          Buffer.from(v.replace(/^whsec_/, ""), "base64").length >= MIN_SECRET_BYTES),
      `must be a base64 secret (whsec_...) of at least ${MIN_SECRET_BYTES} bytes`,
    )
    .describe("Standard Webhooks signing secret (whsec_<base64>); required with WEBHOOK_URLS"),
  WEBHOOK_RETRY_HOURS: z.coerce
    .number()
    .positive()
    .max(24 * 7)
    .default(24)
    .describe("A delivery that keeps failing is retried with exponential backoff for this long, then marked dead"),
  WEBHOOK_BACKOFF_BASE_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(5000)
    .describe("First retry delay; doubled after each failure (capped at 1 h)"),
  WEBHOOK_POLL_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(10)
    .default(1000)
    .describe("How often each replica looks for due webhook deliveries"),
};

export interface WebhookConfig {
  /** WEBHOOK_URLS: every event goes to each; empty = no webhook deliveries are written. */
  urls: string[];
  secret: string | undefined;
  /** WEBHOOK_RETRY_HOURS, in ms: after it a failing delivery is dead. */
  retryMs: number;
  backoffBaseMs: number;
  pollIntervalMs: number;
}

type WebhookEnv = { [K in keyof typeof webhookEnvShape]: z.output<(typeof webhookEnvShape)[K]> };

/** Throws when WEBHOOK_URLS is set without WEBHOOK_SECRET (nothing could sign the deliveries). */
export function webhookConfigFrom(e: WebhookEnv): WebhookConfig {
  if (e.WEBHOOK_URLS.length > 0 && !e.WEBHOOK_SECRET) {
    throw new Error("WEBHOOK_SECRET is required when WEBHOOK_URLS is set");
  }
  return {
    urls: e.WEBHOOK_URLS,
    secret: e.WEBHOOK_SECRET,
    retryMs: e.WEBHOOK_RETRY_HOURS * 3600_000,
    backoffBaseMs: e.WEBHOOK_BACKOFF_BASE_MS,
    pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
  };
}
