import { AssetPage } from "./views/asset-page";
import { Keys } from "./views/keys";
import { Library } from "./views/library";
import { SignIn } from "./views/sign-in";
import { Studio } from "./views/studio";
import { href, route } from "./route";
import { endSession, token } from "./session";
import { useSignal } from "./signal";

export function App() {
  const signedIn = useSignal(token) !== null;
  const current = useSignal(route);
  if (!signedIn) return <SignIn />;
  return (
    <>
      {/* A button, not an #anchor: the hash holds the route. */}
      <button type="button" class="skip" onClick={() => document.getElementById("main")?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <a class="brand" href={href.library}>
          Media library
        </a>
        <nav aria-label="Main">
          <a href={href.library} aria-current={current.view === "library" && !current.trash ? "page" : undefined}>
            Library
          </a>
          <a href={href.trash} aria-current={current.view === "library" && current.trash ? "page" : undefined}>
            Trash
          </a>
          <a href={href.keys} aria-current={current.view === "keys" ? "page" : undefined}>
            API keys
          </a>
          <button type="button" onClick={endSession}>
            Sign out
          </button>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {current.view === "library" && <Library trash={current.trash} key={current.trash ? "trash" : "live"} />}
        {current.view === "asset" && <AssetPage id={current.id} key={current.id} />}
        {current.view === "studio" && <Studio id={current.id} key={current.id} />}
        {current.view === "keys" && <Keys />}
      </main>
    </>
  );
}
