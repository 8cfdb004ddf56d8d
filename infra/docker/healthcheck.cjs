#!/usr/bin/env node
// Container health probe without curl/wget (slim images have neither): exits 0 when
// GET http://127.0.0.1:<port><path> answers 2xx within the timeout, else 1.
//   node /app/healthcheck.cjs <PORT_VARIABLE> [path] [timeoutMs]
//   e.g. node /app/healthcheck.cjs MANAGEMENT_PORT /healthz
// The port is read from the named environment variable, so it always matches the port the
// service itself listens on (both read the same variable).
"use strict";
const http = require("node:http");

const [portVariable, path = "/healthz", timeoutArg = "4000"] = process.argv.slice(2);
const port = Number(portVariable ? process.env[portVariable] : undefined);
if (!portVariable || !Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write(
    `healthcheck: ${portVariable || "<PORT_VARIABLE>"} must hold a port number (got ${JSON.stringify(portVariable ? process.env[portVariable] : undefined)})\n`,
  );
  process.exit(2);
}
const timeoutMs = Number(timeoutArg) > 0 ? Number(timeoutArg) : 4000;

const req = http.get(
  { host: "127.0.0.1", port, path, timeout: timeoutMs, headers: { "user-agent": "healthcheck" } },
  (res) => {
    res.resume();
    const ok = res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300;
    if (!ok) process.stderr.write(`healthcheck: ${path} answered ${res.statusCode}\n`);
    process.exit(ok ? 0 : 1);
  },
);
req.on("timeout", () => {
  process.stderr.write(`healthcheck: ${path} did not answer within ${timeoutMs} ms\n`);
  req.destroy();
  process.exit(1);
});
req.on("error", (err) => {
  process.stderr.write(`healthcheck: ${path}: ${err.message}\n`);
  process.exit(1);
});
