// infra/k8s/ingress: the base plus an Ingress in front of media. No kustomize binary here, so the
// overlay is rendered by renderOverlay (resources and map patches, the parts it uses) and the
// result goes through the base's checks, the Kubernetes schemas and the ingress's own rules.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { containerEnv, k8sProblems, renderOverlay, type Manifests } from "./support/k8s-checks";
import { imageEnv } from "./support/dockerfile-checks";
import { k8sSchemaProblems } from "./support/schemas";
import { repoPath, type Json } from "./support/files";

const OVERLAY = "ingress";
const objectsOf = (m: Manifests): Json[] => Object.values(m.files).flat();
const ingresses = (m: Manifests): Json[] => objectsOf(m).filter((o) => o.kind === "Ingress");

/** What the ingress must hold, given the rendered manifests: [] = fine. */
function ingressProblems(m: Manifests): string[] {
  const problems: string[] = [];
  const objects = objectsOf(m);
  const deployment = (name: string) => objects.find((o) => o.kind === "Deployment" && o.metadata.name === name);
  const env = (name: string) =>
    containerEnv(m, deployment(name).spec.template.spec.containers[0], imageEnv(name as "media" | "management")).env;
  const publicHost = new URL(env("management").MEDIA_PUBLIC_URL!).host;
  const mediaEnv = env("media");
  const timeoutSeconds = Number(mediaEnv.MEDIA_REQUEST_TIMEOUT_MS ?? 30000) / 1000;
  for (const ingress of ingresses(m)) {
    const where = `Ingress ${ingress.metadata.name}`;
    for (const rule of ingress.spec.rules ?? []) {
      if (rule.host !== publicHost)
        problems.push(`${where}: host ${rule.host} is not MEDIA_PUBLIC_URL's ${publicHost}`);
      for (const p of rule.http?.paths ?? []) {
        const svc = objects.find((o) => o.kind === "Service" && o.metadata.name === p.backend?.service?.name);
        if (!svc) problems.push(`${where}: backend Service ${p.backend?.service?.name} does not exist`);
        else if (!svc.spec.ports.some((port: Json) => port.name === p.backend.service.port.name))
          problems.push(`${where}: Service ${svc.metadata.name} has no port ${p.backend.service.port.name}`);
      }
    }
  }
  const pub = ingresses(m).find((i) => i.spec.rules?.some((r: Json) => r.http.paths.some((p: Json) => p.path === "/")));
  if (!pub) problems.push("no Ingress serves /");
  else {
    if (!(pub.spec.tls ?? []).some((t: Json) => t.hosts.includes(publicHost)))
      problems.push(`no TLS for ${publicHost}`);
    const readTimeout = Number(pub.metadata.annotations?.["nginx.ingress.kubernetes.io/proxy-read-timeout"] ?? 60);
    if (readTimeout <= timeoutSeconds)
      problems.push(
        `proxy-read-timeout ${readTimeout} s is not longer than MEDIA_REQUEST_TIMEOUT_MS (${timeoutSeconds} s)`,
      );
  }
  // /internal/ and /metrics: refused to everyone, matched case-insensitively (a regex path).
  const closed = ingresses(m).filter(
    (i) =>
      i.metadata.annotations?.["nginx.ingress.kubernetes.io/denylist-source-range"] === "0.0.0.0/0,::/0" &&
      i.metadata.annotations?.["nginx.ingress.kubernetes.io/use-regex"] === "true",
  );
  const closedPaths = closed.flatMap((i) => i.spec.rules.flatMap((r: Json) => r.http.paths.map((p: Json) => p.path)));
  for (const url of ["/internal/purge", "/internal/eager", "/internal/generation/x", "/metrics", "/internal"]) {
    // ingress-nginx matches regex paths case-insensitively (location ~*): try the path in capitals too.
    if (!closedPaths.some((p: string) => new RegExp(`^${p}`, "i").test(url.toUpperCase())))
      problems.push(`${url} is reachable through the ingress`);
  }
  if (!mediaEnv.MEDIA_TRUSTED_PROXIES) problems.push("media does not trust the ingress controller's X-Forwarded-For");
  return problems;
}

describe("infra/k8s/ingress (overlay)", () => {
  test("renders: the base, the ingress, media trusting the controller's X-Forwarded-For", () => {
    const { manifests, problems } = renderOverlay(OVERLAY);
    expect(problems).toEqual([]);
    expect(ingresses(manifests).map((i) => i.metadata.name)).toEqual(["media", "media-private-paths"]);
    const media = objectsOf(manifests).find((o) => o.kind === "ConfigMap" && o.metadata.name === "media-config");
    expect(media.data.MEDIA_TRUSTED_PROXIES).toBe("10.0.0.0/8,172.16.0.0/12,192.168.0.0/16");
    // The rest of the base is untouched by the patch.
    expect(Object.keys(media.data).length).toBeGreaterThan(1);
  });

  test("passes the base's checks (the media config loader accepts the patched environment)", () => {
    expect(k8sProblems(renderOverlay(OVERLAY).manifests)).toEqual([]);
  });

  test("every object is valid for its apiVersion/kind (kubernetes-models)", () => {
    expect(k8sSchemaProblems(objectsOf(renderOverlay(OVERLAY).manifests))).toEqual([]);
  });

  test("the ingress: MEDIA_PUBLIC_URL's host with TLS, the media Service's port, private paths closed", () => {
    expect(ingressProblems(renderOverlay(OVERLAY).manifests)).toEqual([]);
  });

  describe("the checks catch a broken overlay", () => {
    const cases: Array<[string, (m: Manifests) => void, RegExp]> = [
      [
        "a host other than MEDIA_PUBLIC_URL's",
        (m) => (ingresses(m)[0].spec.rules[0].host = "img.example.com"),
        /host img.example.com is not MEDIA_PUBLIC_URL's media.example.com/,
      ],
      [
        "a backend Service that does not exist",
        (m) => (ingresses(m)[0].spec.rules[0].http.paths[0].backend.service.name = "media-svc"),
        /backend Service media-svc does not exist/,
      ],
      [
        "a port the Service lacks",
        (m) => (ingresses(m)[0].spec.rules[0].http.paths[0].backend.service.port.name = "web"),
        /Service media has no port web/,
      ],
      [
        "a read timeout shorter than a render may wait",
        (m) => (ingresses(m)[0].metadata.annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"] = "20"),
        /proxy-read-timeout 20 s is not longer than MEDIA_REQUEST_TIMEOUT_MS/,
      ],
      [
        "/metrics left open",
        (m) => (ingresses(m)[1].spec.rules[0].http.paths[0].path = "/(internal)(/|$)"),
        /\/metrics is reachable through the ingress/,
      ],
      [
        "private paths matched case-sensitively",
        (m) => delete ingresses(m)[1].metadata.annotations["nginx.ingress.kubernetes.io/use-regex"],
        /\/internal\/purge is reachable through the ingress/,
      ],
    ];
    test.each(cases)("%s", (_name, breakIt, expected) => {
      const m = structuredClone(renderOverlay(OVERLAY).manifests);
      breakIt(m);
      expect(ingressProblems(m).join("\n")).toMatch(expected);
    });

    test("a patch of an object the base lacks, and a missing resource", () => {
      const broken = renderOverlayWith({ patchName: "media-settings", resource: "ingress-tls.yaml" });
      expect(broken.join("\n")).toMatch(/targets ConfigMap media-settings, which the base lacks/);
      expect(broken.join("\n")).toMatch(/resource ingress-tls.yaml does not exist/);
    });
  });
});

/** renderOverlay over a copy of infra/k8s whose overlay names a missing patch target and resource. */
function renderOverlayWith(change: { patchName: string; resource: string }): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-overlay-"));
  try {
    fs.cpSync(repoPath("infra/k8s"), dir, { recursive: true });
    const patch = path.join(dir, OVERLAY, "media-config.patch.yaml");
    fs.writeFileSync(patch, fs.readFileSync(patch, "utf8").replace("name: media-config", `name: ${change.patchName}`));
    const k = path.join(dir, OVERLAY, "kustomization.yaml");
    fs.writeFileSync(
      k,
      fs.readFileSync(k, "utf8").replace("  - ingress.yaml", `  - ingress.yaml\n  - ${change.resource}`),
    );
    return renderOverlay(OVERLAY, dir).problems;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
