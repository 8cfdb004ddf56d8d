export * from "./problem";
export * from "./domain-error";
export * from "./image-formats";
export * from "./management";
export * from "./asset-attributes";
export * from "./original-header";
export * from "./media/index";
export * from "./purge";
