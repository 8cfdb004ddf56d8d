/**
 * IPX 3 (the Node peer) over node:http for the media bench, on the service's blob folder:
 * GET /<modifiers>/<assetId>@blob. Started as a child process (PORT, IPX_DIR).
 */
import { createServer } from "node:http";
import { createIPX, createIPXNodeServer, ipxFSStorage } from "ipx";

const ipx = createIPX({ storage: ipxFSStorage({ dir: process.env.IPX_DIR! }) });
createServer(createIPXNodeServer(ipx)).listen(Number(process.env.PORT), "127.0.0.1");
