import { createHash, randomUUID } from "node:crypto";
import dns from "node:dns";
import fs from "node:fs";
import fsp from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import ipaddr from "ipaddr.js";
import type { ImportFromUrlRequest, UploadResponse } from "@media-platform/contracts";
import type { Principal } from "../auth/keys";
import { defaultTransportsConfig, IMPORT_MAX_REDIRECTS } from "../config/transports";
import { defaultUploadSettings, SPOOL_PREFIX } from "../config/uploads";
import type { AppContext } from "../context";
import { ImportError } from "../domain-errors";
import { uploadAsset } from "./service";

/**
 * Import from a URL: the service fetches the image itself, so the fetch is guarded against
 * reaching the service's own network (SSRF). Every host, the first and each redirect's, must be a
 * public address: an address literal (the URL parser has already turned decimal, octal, hex and
 * short IPv4 spellings into dotted form) is checked as it stands, a name at connect time by the
 * socket's own `lookup`, which hands the socket exactly the address it checked (no second
 * resolution to rebind). IMPORT_ALLOWED_HOSTS names hosts exempt from the address check.
 */

const IPV6_RANGE_NAMES: Record<string, string> = {
  unspecified: "the unspecified address",
  loopback: "a loopback address",
  linkLocal: "a link-local address",
  multicast: "a multicast address",
  uniqueLocal: "a unique local (private) address",
  ipv4Mapped: "an IPv4-mapped IPv6 address",
  rfc6145: "an IPv4-translated IPv6 address",
  rfc6052: "a NAT64 address",
  "6to4": "a 6to4 address",
  teredo: "a Teredo address",
};
const IPV4_RANGE_NAMES: Record<string, string> = {
  unspecified: "the unspecified address 0.0.0.0/8",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  linkLocal: "a link-local address (cloud metadata included)",
  loopback: "a loopback address",
  carrierGradeNat: "a CGNAT address",
  private: "a private address",
  reserved: "a reserved address",
};

/** Why an address may not be imported from, or null for a public unicast address. */
export function addressRefusal(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return "not an IP address";
  }
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6;
    const range = v6.range();
    if (range !== "unicast") return IPV6_RANGE_NAMES[range] ?? `a special-purpose address (${range})`;
    // ::a.b.c.d (deprecated IPv4-compatible): some stacks still route it to the IPv4 address.
    if (v6.parts.slice(0, 6).every((p) => p === 0)) return "an IPv4-compatible IPv6 address";
    return null;
  }
  const range = (parsed as ipaddr.IPv4).range();
  if (range !== "unicast") return IPV4_RANGE_NAMES[range] ?? `a special-purpose address (${range})`;
  return null;
}

class RefusedAddress extends Error {}

/** The URL's host without IPv6 brackets, and its effective port. */
function hostAndPort(url: URL): { host: string; port: number } {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return { host, port: url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80 };
}

function isAllowedHost(url: URL, allowed: readonly string[]): boolean {
  const { host, port } = hostAndPort(url);
  return allowed.some((entry) => {
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(entry);
    if (!m) return false;
    const entryHost = m[1]!.replace(/^\[(.*)\]$/, "$1");
    return entryHost === host && (m[2] === undefined || Number(m[2]) === port);
  });
}

/** Checks a URL before connecting; the address of a name is checked by `guardedLookup` at connect time. */
function refuseUrl(url: URL, allowed: readonly string[]): void {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ImportError("import-refused", `Only http and https URLs can be imported (not ${url.protocol})`);
  }
  if (url.username || url.password) throw new ImportError("import-refused", "URLs with credentials are not imported");
  if (isAllowedHost(url, allowed)) return;
  const { host } = hostAndPort(url);
  if (net.isIP(host)) {
    const refusal = addressRefusal(host);
    if (refusal) throw new ImportError("import-refused", `${url.hostname} is ${refusal}`);
  }
}

/** dns.lookup for the socket: refuses a name with any non-public address, else pins the first. */
const guardedLookup: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { all: true, family: options.family, hints: options.hints }, (err, addresses) => {
    if (err) return callback(err, "", 4);
    for (const a of addresses) {
      const refusal = addressRefusal(a.address);
      if (refusal) return callback(new RefusedAddress(`${hostname} resolves to ${a.address}, ${refusal}`), "", 4);
    }
    const first = addresses[0];
    if (!first) return callback(new Error(`${hostname} has no address`), "", 4);
    if ((options as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, [first]);
    } else callback(null, first.address, first.family);
  });
};

/** The part of an answer the import reads. */
interface Fetched {
  response: http.IncomingMessage;
  url: URL;
}

function get(url: URL, allowed: readonly string[], signal: AbortSignal): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http;
    const req = client.get(url, {
      agent: false,
      signal,
      // An allowed host may be loopback or private: only its name was vouched for, so its
      // resolution goes unchecked; every other name is checked (and pinned) as it connects.
      lookup: isAllowedHost(url, allowed) ? undefined : guardedLookup,
      headers: { "User-Agent": "media-platform-import", Accept: "image/*" },
    });
    req.once("response", resolve);
    req.once("error", reject);
  });
}

async function fetchFollowing(start: URL, allowed: readonly string[], signal: AbortSignal): Promise<Fetched> {
  let url = start;
  for (let redirects = 0; ; redirects++) {
    refuseUrl(url, allowed);
    let response: http.IncomingMessage;
    try {
      response = await get(url, allowed, signal);
    } catch (err) {
      if (err instanceof RefusedAddress) throw new ImportError("import-refused", err.message);
      if (signal.aborted) throw err;
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new ImportError("import-failed", `${url.host} could not be reached (${reason})`);
    }
    const status = response.statusCode ?? 0;
    if (status >= 300 && status < 400 && response.headers.location) {
      response.resume();
      if (redirects >= IMPORT_MAX_REDIRECTS) {
        throw new ImportError("import-refused", `More than ${IMPORT_MAX_REDIRECTS} redirects`);
      }
      url = new URL(response.headers.location, url);
      continue;
    }
    if (status < 200 || status >= 300) {
      response.resume();
      throw new ImportError("import-failed", `The remote server answered ${status} for ${url.host}${url.pathname}`);
    }
    return { response, url };
  }
}

/** The file name an import is stored with: the request's, else the URL's last path segment. */
function filenameOf(url: URL, given: string | undefined): string {
  if (given) return given;
  const last = url.pathname.split("/").filter(Boolean).pop();
  try {
    return last ? decodeURIComponent(last) : "import";
  } catch {
    return last ?? "import";
  }
}

/**
 * Fetches `request.url` (redirects followed and checked, the size limit and the total deadline
 * applied while streaming to a spool file) and runs the multipart upload's intake on it.
 */
export async function importFromUrl(
  ctx: AppContext,
  principal: Principal,
  request: ImportFromUrlRequest,
): Promise<UploadResponse> {
  const settings = (ctx.transports ?? defaultTransportsConfig(path.join(process.cwd(), ".data"))).import;
  const spoolDir = (ctx.uploads ?? defaultUploadSettings()).spoolDir;
  const max = ctx.maxUploadBytes;
  const controller = new AbortController();
  const deadline = setTimeout(() => controller.abort(), settings.timeoutMs);
  const target = path.join(spoolDir, `${SPOOL_PREFIX}${randomUUID()}`);
  try {
    const { response, url } = await fetchFollowing(new URL(request.url), settings.allowedHosts, controller.signal);
    const type = (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type && !type.startsWith("image/") && type !== "application/octet-stream") {
      response.destroy();
      throw new ImportError("import-not-an-image", `${url.host}${url.pathname} answered ${type}, not an image`);
    }
    const declared = Number(response.headers["content-length"]);
    if (Number.isFinite(declared) && declared > max) {
      response.destroy();
      throw new ImportError("too-large", `The file (${declared} bytes) exceeds the upload limit of ${max} bytes`);
    }
    const hash = createHash("sha256");
    let size = 0;
    // The refusal settles the import at once: a pipeline torn down by its middle stream's error
    // was seen to stay pending on Node 24 (its deadline's abort included), holding the request.
    let refuse!: (error: Error) => void;
    const refused = new Promise<never>((_resolve, reject) => (refuse = reject));
    refused.catch(() => undefined);
    const abort = () => refuse(new Error("import aborted"));
    controller.signal.addEventListener("abort", abort, { once: true });
    const measure = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > max) {
          const error = new ImportError("too-large", `The file exceeds the upload limit of ${max} bytes`);
          refuse(error);
          done(error);
          return;
        }
        hash.update(chunk);
        done(null, chunk);
      },
    });
    await fsp.mkdir(spoolDir, { recursive: true, mode: 0o700 });
    const spool = fs.createWriteStream(target, { flags: "wx", mode: 0o600 });
    const spoolClosed = new Promise<void>((resolve) => spool.once("close", resolve));
    try {
      await Promise.race([pipeline(response, measure, spool, { signal: controller.signal }), refused]);
    } catch (err) {
      // Nothing stays open or half-written: the source is cut and the spool file closed before
      // `finally` removes it.
      response.destroy();
      spool.destroy();
      await spoolClosed;
      throw err;
    } finally {
      controller.signal.removeEventListener("abort", abort);
    }
    clearTimeout(deadline);
    return await uploadAsset(
      ctx,
      principal,
      { path: target, size, sha256: hash.digest("hex"), originalname: filenameOf(url, request.filename) },
      { collectionId: request.collectionId },
    );
  } catch (err) {
    if (controller.signal.aborted && !(err instanceof ImportError)) {
      throw new ImportError("import-timeout", `The import took longer than ${settings.timeoutMs} ms`);
    }
    throw err;
  } finally {
    clearTimeout(deadline);
    await fsp.rm(target, { force: true });
  }
}
