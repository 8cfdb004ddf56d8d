// One jest run over every package; each package keeps its tests in <pkg>/test.
const transform = {
  "^.+\\.(t|j)sx?$": [
    "@swc/jest",
    { jsc: { target: "es2022", parser: { syntax: "typescript" } }, module: { type: "commonjs" } },
  ],
};
const project = (dir) => ({
  // "." is the repository's own test folder (the documentation checks).
  displayName: dir === "." ? "docs" : dir,
  rootDir: `<rootDir>/${dir}`,
  testMatch: ["<rootDir>/test/**/*.test.ts"],
  testEnvironment: "node",
  transform,
  transformIgnorePatterns: ["/node_modules/"],
});
module.exports = {
  rootDir: __dirname,
  projects: [
    "packages/contracts",
    "packages/storage",
    "packages/observability",
    "packages/client",
    "packages/runtime",
    "services/management",
    "services/media",
    "apps/library",
    "infra",
    "bench",
    ".",
  ]
    .filter((d) => require("node:fs").existsSync(`${__dirname}/${d}/test`))
    .map(project),
  // CI's machine may be loaded: each test gets more time there.
  testTimeout: process.env.CI ? 120000 : 60000,
  // JEST_MAX_WORKERS=N runs N workers; unset, jest's default (one on two cores).
  ...(process.env.JEST_MAX_WORKERS && { maxWorkers: Number(process.env.JEST_MAX_WORKERS) }),
};
