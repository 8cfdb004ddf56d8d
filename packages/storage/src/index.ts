export * from "./blob-store";
