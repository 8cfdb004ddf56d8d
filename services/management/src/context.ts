import type { Metrics } from "@media-platform/observability";
import type { BlobStore } from "@media-platform/storage";
import type { Logger } from "pino";
import type { UploadSettings } from "./assets/upload";
import type { PrismaClient } from "./generated/prisma/client";

/** What the route handlers and services need; built by startManagement or by a test. */
export interface AppContext {
  prisma: PrismaClient;
  blobStore: BlobStore;
  log: Logger;
  mediaPublicUrl: string;
  maxUploadBytes: number;
  limitInputPixels: number;
  duplicateHammingThreshold: number;
  /** Upload spool folder, body idle timeout, concurrent upload cap; defaultUploadSettings() when omitted. */
  uploads?: UploadSettings;
  /** Prometheus metrics (upload bytes, dependency errors); createApp fills it in when omitted. */
  metrics?: Metrics;
}
