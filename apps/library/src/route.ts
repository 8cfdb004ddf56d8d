import { signal } from "./signal";

/** Hash routes: the server serves one page, and no token or id ever goes to it in a URL path. */
export type Route =
  | { view: "library"; trash: boolean }
  | { view: "asset"; id: string }
  | { view: "studio"; id: string }
  | { view: "keys" };

const UUID = "[0-9a-fA-F-]{36}";

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, "");
  let m = new RegExp(`^/assets/(${UUID})/studio$`).exec(path);
  if (m) return { view: "studio", id: m[1]!.toLowerCase() };
  m = new RegExp(`^/assets/(${UUID})$`).exec(path);
  if (m) return { view: "asset", id: m[1]!.toLowerCase() };
  if (path === "/keys") return { view: "keys" };
  return { view: "library", trash: path === "/trash" };
}

export const route = signal<Route>(parseRoute(window.location.hash));
window.addEventListener("hashchange", () => route.set(parseRoute(window.location.hash)));

export const href = {
  library: "#/",
  trash: "#/trash",
  keys: "#/keys",
  asset: (id: string) => `#/assets/${id}`,
  studio: (id: string) => `#/assets/${id}/studio`,
};

export function navigate(to: string): void {
  window.location.hash = to;
}
