export { MediaPlatformClient, guessContentType } from "./client";
export type {
  AssetPatch,
  ClientOptions,
  FullTextParams,
  ImportFromUrlInput,
  ListAssetsParams,
  ResumableUploadInput,
  DirectUploadInput,
  TokenSource,
  UploadInput,
} from "./client";
export { ApiError, ResponseValidationError } from "./errors";
export { MediaUrlBuilder, mediaUrl, originalUrl, step } from "./media-url";
export type { MediaUrlOptions } from "./media-url";
export { ResponsiveImages, responsiveImages, sizes } from "./responsive";
export type { Picture, PictureSource, ResponsiveOptions } from "./responsive";
export { MediaUrlError } from "@media-platform/contracts";
export type {
  AssetDto,
  CollectionDto,
  DuplicateMatch,
  FullTextResponse,
  ListAssetsResponse,
  ListedAssetDto,
  FacetField,
  ListIncludeField,
  SignMediaUrlResponse,
  SignMediaUrlsResponse,
  ListCollectionsResponse,
  Problem,
  TransformationStep,
  UploadResponse,
} from "@media-platform/contracts";
