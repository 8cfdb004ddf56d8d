export * from "./params";
export * from "./transformations";
export * from "./url";
export * from "./signing";
export * from "./originals";
export * from "./presets";
