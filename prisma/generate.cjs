// Runs `prisma generate` offline: generation never calls the schema engine, but the CLI
// insists on locating one, so we point it at a stub.
const { spawnSync } = require("node:child_process");
const path = require("node:path");
const fs = require("node:fs");

const root = path.resolve(__dirname, "..");
const stub = path.join(__dirname, "engine-stub.sh");
fs.chmodSync(stub, 0o755);
const bin = path.join(root, "node_modules", ".bin", "prisma");
if (!fs.existsSync(bin)) {
  console.log("prisma CLI not installed yet; skipping client generation");
  process.exit(0);
}
const res = spawnSync(bin, ["generate", "--schema", path.join(__dirname, "schema.prisma")], {
  cwd: root,
  stdio: "inherit",
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: stub,
    PRISMA_QUERY_ENGINE_LIBRARY: stub,
    PRISMA_HIDE_UPDATE_MESSAGE: "1",
    CHECKPOINT_DISABLE: "1",
  },
});
process.exit(res.status ?? 1);
