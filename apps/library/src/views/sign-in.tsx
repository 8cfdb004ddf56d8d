import { useState } from "preact/hooks";
import { client, describeError, devSignIn, oidc, settings, signIn, signInMessage, signOut } from "../session";
import { useSignal } from "../signal";

export function SignIn() {
  const [value, setValue] = useState("");
  const [workspace, setWorkspace] = useState("default");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const providerMessage = useSignal(signInMessage);
  const shown = error ?? providerMessage;

  async function withProvider() {
    setBusy(true);
    setError(null);
    try {
      await oidc!.start();
    } catch (err) {
      setError(describeError(err));
      setBusy(false);
    }
  }

  async function withToken(event: Event) {
    event.preventDefault();
    const trimmed = value.trim().replace(/^Bearer\s+/i, "");
    if (!trimmed) {
      setError("Paste a bearer token");
      return;
    }
    setBusy(true);
    setError(null);
    signIn(trimmed);
    try {
      // One cheap call proves the token before the library opens.
      await client.listCollections();
    } catch (err) {
      signOut();
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  }

  async function development(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await devSignIn(workspace.trim());
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="sign-in" id="main">
      <h1>Media library</h1>
      {oidc && (
        <p>
          <button type="button" class="provider" onClick={() => void withProvider()} disabled={busy}>
            Sign in with {oidc.settings.providerName}
          </button>
        </p>
      )}
      <form onSubmit={withToken} aria-describedby={shown ? "sign-in-error" : undefined}>
        <label for="token">Bearer token</label>
        <textarea
          id="token"
          name="token"
          rows={4}
          autocomplete="off"
          spellcheck={false}
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
        <p class="hint">
          Kept in this tab only (sessionStorage).
          {settings.devSignIn && (
            <>
              {" "}
              Create one with <code>pnpm run token --workspace &lt;id&gt;</code>, or an API key.
            </>
          )}
        </p>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      {settings.devSignIn && (
        <form onSubmit={development} class="dev">
          <h2>Development sign-in</h2>
          <p class="hint">Embedded authentication is on: this server mints a one-hour token for a workspace.</p>
          <label for="workspace">Workspace</label>
          <input id="workspace" value={workspace} onInput={(e) => setWorkspace(e.currentTarget.value)} />
          <button type="submit" disabled={busy}>
            Sign in as developer
          </button>
        </form>
      )}
      {shown && (
        <p id="sign-in-error" class="error" role="alert">
          {shown}
        </p>
      )}
    </main>
  );
}
