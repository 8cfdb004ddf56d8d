import type { IncomingMessage, ServerResponse } from "node:http";
import type { UsageReporter } from "../usage/usage-reports";
import type { FormatNegotiator } from "../negotiation";
import type { MediaAdmission } from "./admission";
import type { HotPath } from "./hot-path";
import type { RenditionService } from "./rendition-service";

/** What the media route (app.ts) needs. */
export interface MediaRouteDeps {
  service: RenditionService;
  /** The rules a media URL is admitted by (shared with GET /info). */
  admission: MediaAdmission;
  /** MEDIA_AUTO_FORMAT on: responses Vary: Accept. */
  negotiator?: FormatNegotiator;
  /** Answers a Redis-tier hit as a memory hit is answered; unset: the flight's lookup answers it. */
  hotPath?: Pick<HotPath, "answerShared">;
  /** Cuts a response its client does not take in time (MEDIA_SEND_TIMEOUT_MS); unset = no limit. */
  guardSend?: (res: ServerResponse) => void;
  /** Counts renders and bytes sent per asset (usage/usage-reports.ts); unset = not counted. */
  usage?: Pick<UsageReporter, "rendered" | "sent">;
  /** Who a MISS is charged to (MEDIA_CLIENT_SHARE); unset = nobody. */
  clientOf?: (req: IncomingMessage) => string;
}
