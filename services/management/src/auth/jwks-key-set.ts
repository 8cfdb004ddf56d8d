import { createPublicKey, type KeyObject } from "node:crypto";
import type JwksRsa from "jwks-rsa";
import { LRUCache } from "lru-cache";

/** Unknown kids one client may ask about per minute; beyond, they are refused without a fetch. */
export const JWKS_UNKNOWN_KIDS_PER_CLIENT = 3;
/** Fetches of the JWKS per minute in all (refreshes and unknown kids together). */
export const JWKS_FETCHES_PER_MINUTE = 10;
/** A key set older than this is refreshed; its kids keep being served meanwhile. */
export const JWKS_MAX_AGE_MS = 10 * 60 * 1000;

const MINUTE_MS = 60_000;
/** Clients whose unknown kids are counted (least recently seen forgotten first). */
const CLIENTS_TRACKED = 10_000;

const TOO_MANY_UNKNOWN = "too many tokens with unknown signing keys (kid) from this client; try again in a minute";
const NO_SUCH_KID = "no signing key with this kid in the JWKS";
const FETCHED_TOO_OFTEN = "the JWKS was fetched too often in the last minute; try again in a minute";
const UNREACHABLE = "the JWKS could not be fetched";
/** Why a token's key was not found, each a 401's detail as it is (no address or cause in them). */
export const SIGNING_KEY_ERRORS: ReadonlySet<string> = new Set([
  TOO_MANY_UNKNOWN,
  NO_SUCH_KID,
  FETCHED_TOO_OFTEN,
  UNREACHABLE,
]);

export interface JwksKeySetOptions {
  maxAgeMs?: number;
  fetchesPerMinute?: number;
  unknownKidsPerClient?: number;
}

/**
 * The identity provider's signing keys, by kid, from the last JWKS fetch that succeeded. A kid
 * in it is served from it, also while a refresh fails or is not allowed (stale-key fallback): no
 * request a stranger sends can make a known key unavailable. Only a kid not in it asks for a
 * fetch (a key the provider has just published), and only within two budgets: a few per client
 * per minute, and JWKS_FETCHES_PER_MINUTE in all. Fetches are single-flight.
 */
export class JwksKeySet {
  private keys = new Map<string, KeyObject>();
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | undefined;
  /** Start times of the fetches of the last minute. */
  private fetches: number[] = [];
  private readonly unknownByClient = new LRUCache<string, number[]>({ max: CLIENTS_TRACKED });
  private readonly maxAgeMs: number;
  private readonly fetchesPerMinute: number;
  private readonly unknownKidsPerClient: number;

  constructor(
    private readonly client: Pick<JwksRsa.JwksClient, "getSigningKeys">,
    options: JwksKeySetOptions = {},
    private readonly now: () => number = Date.now,
  ) {
    this.maxAgeMs = options.maxAgeMs ?? JWKS_MAX_AGE_MS;
    this.fetchesPerMinute = options.fetchesPerMinute ?? JWKS_FETCHES_PER_MINUTE;
    this.unknownKidsPerClient = options.unknownKidsPerClient ?? JWKS_UNKNOWN_KIDS_PER_CLIENT;
    // Fetched at start, so the first tokens find their key without waiting.
    this.refresh().catch(() => undefined);
  }

  /** The key of `kid` (a token without one: the only key, if the set has one) for `clientId`'s token. */
  async key(kid: string | undefined, clientId: string): Promise<KeyObject> {
    if (this.inflight && this.keys.size === 0) await this.inflight.catch(() => undefined);
    const known = this.lookup(kid);
    if (known) {
      if (this.now() - this.fetchedAt > this.maxAgeMs) this.refresh().catch(() => undefined);
      return known;
    }
    if (!this.allowUnknown(clientId)) {
      throw new Error(TOO_MANY_UNKNOWN);
    }
    await this.refresh();
    const fetched = this.lookup(kid);
    if (!fetched) throw new Error(NO_SUCH_KID);
    return fetched;
  }

  private lookup(kid: string | undefined): KeyObject | undefined {
    if (kid !== undefined) return this.keys.get(kid);
    return this.keys.size === 1 ? this.keys.values().next().value : undefined;
  }

  private allowUnknown(clientId: string): boolean {
    const since = this.now() - MINUTE_MS;
    const asked = (this.unknownByClient.get(clientId) ?? []).filter((t) => t > since);
    if (asked.length >= this.unknownKidsPerClient) return false;
    asked.push(this.now());
    this.unknownByClient.set(clientId, asked);
    return true;
  }

  /** One fetch at a time, within the budget; the set is replaced only by a fetch that succeeded. */
  private refresh(): Promise<void> {
    if (this.inflight) return this.inflight;
    const since = this.now() - MINUTE_MS;
    this.fetches = this.fetches.filter((t) => t > since);
    if (this.fetches.length >= this.fetchesPerMinute) {
      return Promise.reject(new Error(FETCHED_TOO_OFTEN));
    }
    this.fetches.push(this.now());
    this.inflight = this.client
      .getSigningKeys()
      .then((signingKeys) => {
        const keys = new Map<string, KeyObject>();
        for (const signing of signingKeys) {
          const pem = signing.getPublicKey();
          // The same key under the same kid keeps its parsed KeyObject.
          const previous = signing.kid === undefined ? undefined : this.keys.get(signing.kid);
          const reuse = previous?.export({ format: "pem", type: "spki" }) === pem ? previous : undefined;
          keys.set(signing.kid ?? "", reuse ?? createPublicKey(pem));
        }
        this.keys = keys;
        this.fetchedAt = this.now();
      })
      .catch(() => {
        // The cause (an address, a status) is not for the caller; the set in hand stays.
        throw new Error(UNREACHABLE);
      })
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
  }
}
