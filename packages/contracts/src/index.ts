export * from "./problem";
export * from "./management";
export * from "./media/index";
