export * from "./routes";
export * from "./document";
