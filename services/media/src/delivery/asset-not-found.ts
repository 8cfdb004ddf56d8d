/** No original is stored under this asset id (deleted, or never uploaded); the HTTP layer answers 404. */
export class AssetNotFoundError extends Error {
  constructor(readonly assetId: string) {
    super(`No asset ${assetId} exists`);
    this.name = "AssetNotFoundError";
  }
}
