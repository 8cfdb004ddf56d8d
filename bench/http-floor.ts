/**
 * The HTTP floor of the media bench's MISS cells: the least a Node HTTP server can do for the
 * same work. A bare node:http server that answers GET /<step index>/<assetId>@blob by reading the
 * file (fs.readFile) and running the raw sharp reference's calls for that step (media-cases.ts),
 * with the same libvips cache setting as the service. No URL grammar, cache, limits or headers
 * beyond Content-Type/Length: what it loses to raw sharp is what HTTP itself costs on the machine.
 * Started as a child process (PORT, FLOOR_DIR).
 */
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import path from "node:path";
import sharp from "sharp";
import { benchImages, benchSteps } from "./media-cases";

sharp.cache(false);
const dir = process.env.FLOOR_DIR!;

createServer((req, res) => {
  const match = /^\/(\d+)\/([0-9a-f-]{36})@blob$/.exec(req.url ?? "");
  const step = match ? benchSteps[Number(match[1])] : undefined;
  const image = match ? benchImages.find((i) => match[2]!.endsWith(String(i.tag))) : undefined;
  if (!match || !step || !image) {
    res.writeHead(404).end();
    return;
  }
  readFile(path.join(dir, `${match[2]}@blob`))
    .then((input) => step.raw(sharp(input, { failOn: "error" }), image).toBuffer())
    .then(
      (data) => {
        res.writeHead(200, { "Content-Type": `image/${image.format}`, "Content-Length": data.length });
        res.end(data);
      },
      () => res.writeHead(500).end(),
    );
}).listen(Number(process.env.PORT), "127.0.0.1");
