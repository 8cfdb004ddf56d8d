// A reference setting of `pnpm bench tracing` (`-r` for the media service): an AsyncLocalStorage in
// use, as OpenTelemetry's context manager's is once a span has been made active, and nothing else
// of tracing. What it costs is what Node's context propagation costs every request.
const { AsyncLocalStorage } = require("node:async_hooks");
new AsyncLocalStorage().enterWith({});
