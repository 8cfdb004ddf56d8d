export * from "./blob-store";
export * from "./keys";
export * from "./filesystem";
export * from "./s3";
export * from "./config";
export * from "./shared-secret";
