export {
  blankAsUnset,
  ConfigError,
  configProblems,
  intField,
  numberField,
  optionalStringField,
  parseEnv,
  portField,
  positiveIntField,
  type ConfigProblem,
} from "./env";
export { listen, runService, serviceUrl, type ServiceMain } from "./serve";
export { nativeRequire } from "./native-require";
export { tracingEnvShape } from "./tracing-env";
