import type { IncomingMessage, ServerResponse } from "node:http";
import type { MediaLimits, PresetTable } from "@media-platform/contracts";
import type { FormatNegotiator } from "../negotiation";
import type { RenditionService } from "./rendition-service";
import type { UrlSigner } from "./signing";

/** What the media route (app.ts) and the rendition info route (info/) need. */
export interface MediaRouteDeps {
  service: RenditionService;
  /** MEDIA_PRESETS_FILE, validated (default: none). */
  presets?: PresetTable;
  /** MEDIA_PRESETS_ONLY: 403 for every media URL that is not made of presets. */
  presetsOnly?: boolean;
  /** MEDIA_AUTO_FORMAT on: the Accept bucket is part of the cache key; responses Vary: Accept. */
  negotiator?: FormatNegotiator;
  /** AVIF encoder effort for negotiated AVIF. */
  avifEffort?: number;
  signer: UrlSigner | undefined;
  limits: MediaLimits;
  /** MEDIA_ALLOW_QUERY: false refuses every query string except a signature (400). Default true. */
  allowQuery?: boolean;
  /** Cuts a response its client does not take in time (MEDIA_SEND_TIMEOUT_MS); unset = no limit. */
  guardSend?: (res: ServerResponse) => void;
  /** Who a MISS is charged to (MEDIA_CLIENT_SHARE); unset = nobody. */
  clientOf?: (req: IncomingMessage) => string;
}
