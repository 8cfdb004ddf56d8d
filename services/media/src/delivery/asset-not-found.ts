import { DomainError } from "@media-platform/contracts";

/** No original is stored under this asset id (deleted, or never uploaded): answered 404. */
export class AssetNotFoundError extends DomainError<"asset-not-found"> {
  readonly code = "asset-not-found";

  constructor(readonly assetId: string) {
    super(`No asset ${assetId} exists`);
    this.name = "AssetNotFoundError";
  }
}
