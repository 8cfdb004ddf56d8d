// Reference for the HIT path: the least a Node server can do to send the same bytes.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

const body = readFileSync(process.env.BODY_FILE!);
const headers = {
  "content-type": "image/jpeg",
  "content-length": String(body.length),
  etag: `"${createHash("sha256").update(body).digest("base64url")}"`,
  "cache-control": "public, max-age=31536000, immutable",
  "x-cache": "HIT",
};
createServer((_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
}).listen(Number(process.env.PORT), "127.0.0.1");
