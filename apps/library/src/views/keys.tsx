import { useEffect, useState } from "preact/hooks";
import {
  API_SCOPES,
  type ApiKeyDto,
  type ApiScope,
  type CreatedApiKeyDto,
  type UsageResponse,
} from "@media-platform/contracts";
import { client, describeError } from "../session";

const formatBytes = (n: number) =>
  n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${Math.round(n / 1e3)} kB`;
const when = (iso: string | null, none: string) => (iso ? new Date(iso).toLocaleString() : none);

/** API keys of the workspace (scope admin) and what it stores and uses. */
export function Keys() {
  const [keys, setKeys] = useState<ApiKeyDto[] | null>(null);
  const [usage, setUsage] = useState<UsageResponse | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<ApiScope[]>(["read"]);
  const [expires, setExpires] = useState("");
  const [created, setCreated] = useState<CreatedApiKeyDto | null>(null);
  const [busy, setBusy] = useState(false);

  async function load() {
    try {
      const [list, used] = await Promise.all([client.listApiKeys(), client.getUsage()]);
      setKeys(list.keys);
      setUsage(used);
      setError(null);
    } catch (err) {
      setError(describeError(err));
    }
  }
  useEffect(() => {
    void load();
  }, []);

  async function create(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const key = await client.createApiKey({
        name: name.trim(),
        scopes,
        ...(expires && { expiresAt: new Date(`${expires}T23:59:59Z`).toISOString() }),
      });
      setCreated(key);
      setName("");
      await load();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  }

  async function revoke(key: ApiKeyDto) {
    if (!window.confirm(`Revoke "${key.name}"? Anything using it gets 401 from now on.`)) return;
    try {
      await client.revokeApiKey(key.id);
      if (created?.id === key.id) setCreated(null);
      await load();
    } catch (err) {
      setError(describeError(err));
    }
  }

  const toggle = (scope: ApiScope) =>
    setScopes((s) => (s.includes(scope) ? s.filter((x) => x !== scope) : [...s, scope]));
  const today = usage?.days.at(-1);

  return (
    <section class="keys" aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      {usage && (
        <p class="hint" data-testid="usage">
          {formatBytes(usage.storageBytes)} stored in {usage.assets} assets
          {usage.quotas.storageBytes.limit !== null && ` of ${formatBytes(usage.quotas.storageBytes.limit)}`}
          {today &&
            ` · today: ${today.uploads} uploads, ${today.renders} renders, ${formatBytes(today.egressBytes)} sent`}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {created && (
        <div class="created-key" role="status">
          <p>
            The key <strong>{created.name}</strong>. Copy it now: it is not shown again.
          </p>
          <input readOnly value={created.secret} aria-label="The new key" onFocus={(e) => e.currentTarget.select()} />
        </div>
      )}
      <form onSubmit={create}>
        <label for="key-name">Name</label>
        <input id="key-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <fieldset>
          <legend>Scopes</legend>
          {API_SCOPES.map((scope) => (
            <label key={scope}>
              <input type="checkbox" checked={scopes.includes(scope)} onChange={() => toggle(scope)} /> {scope}
            </label>
          ))}
        </fieldset>
        <label for="key-expires">Expires (optional)</label>
        <input id="key-expires" type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
        <button type="submit" disabled={busy || scopes.length === 0}>
          Create key
        </button>
      </form>
      {keys && keys.length === 0 && <p class="hint">No keys yet.</p>}
      {keys && keys.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Key</th>
              <th>Scopes</th>
              <th>Expires</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.map((key) => (
              <tr key={key.id}>
                <td>{key.name}</td>
                <td>
                  <code>{key.prefix}…</code>
                </td>
                <td>{key.scopes.join(", ")}</td>
                <td>{when(key.expiresAt, "never")}</td>
                <td>{when(key.lastUsedAt, "never")}</td>
                <td>
                  <button type="button" onClick={() => void revoke(key)}>
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
