import fs from "node:fs";
import { SERVICES } from "./support/env-rules";
import { imageEnv } from "./support/dockerfile-checks";
import { containerEnv, k8sProblems, loadManifests, parseQuantity, type Manifests } from "./support/k8s-checks";
import { parseYamlDocuments, repoPath, type Json } from "./support/files";

const copy = (): Manifests => structuredClone(loadManifests());
const find = (m: Manifests, kind: string, name: string): Json => {
  const o = Object.values(m.files)
    .flat()
    .find((x) => x.kind === kind && x.metadata?.name === name);
  if (!o) throw new Error(`${kind} ${name} not found`);
  return o;
};
const container = (m: Manifests, name: string): Json => find(m, "Deployment", name).spec.template.spec.containers[0];

describe("infra/k8s", () => {
  test("every file parses as YAML and every document is a Kubernetes object", () => {
    const files = fs.readdirSync(repoPath("infra/k8s")).filter((f) => /\.ya?ml$/.test(f));
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const f of files) {
      const docs = parseYamlDocuments(fs.readFileSync(repoPath("infra/k8s", f), "utf8"));
      expect(docs.length).toBeGreaterThan(0);
      for (const d of docs)
        expect(d).toEqual(expect.objectContaining({ apiVersion: expect.any(String), kind: expect.any(String) }));
    }
  });

  test("passes every check: kustomization, namespaces, selectors, probes, ports, resources, env rules, references, HPA", () => {
    expect(k8sProblems(loadManifests())).toEqual([]);
  });

  test("the objects a deployment needs are there", () => {
    const m = loadManifests();
    const kinds = Object.values(m.files)
      .flat()
      .map((o) => `${o.kind}/${o.metadata.name}`);
    expect(kinds).toEqual(
      expect.arrayContaining([
        "Namespace/media-platform",
        "Deployment/management",
        "Deployment/media",
        "Service/management",
        "Service/media",
        "HorizontalPodAutoscaler/media",
        "ConfigMap/storage-config",
        "Secret/storage-credentials",
        "Service/postgres",
        "Service/redis",
      ]),
    );
  });

  test("the resolved container environments are production ones", () => {
    const m = loadManifests();
    const mgmt = containerEnv(m, container(m, "management"), imageEnv("management")).env;
    const media = containerEnv(m, container(m, "media"), imageEnv("media")).env;
    expect(mgmt.DATABASE_URL).toMatch(/^postgresql:\/\/[^@]+@postgres:5432\//);
    expect(mgmt.AUTH_JWT_SECRET?.length).toBeGreaterThanOrEqual(32);
    expect(media.REDIS_URL).toBe("redis://redis:6379");
    expect(mgmt.S3_BUCKET).toBe(media.S3_BUCKET);
    expect(mgmt.S3_ACCESS_KEY_ID).toBe(media.S3_ACCESS_KEY_ID);
    expect(Number(mgmt[SERVICES.management.portVariable])).toBe(container(m, "management").ports[0].containerPort);
    expect(Number(media[SERVICES.media.portVariable])).toBe(container(m, "media").ports[0].containerPort);
  });

  test("quantities", () => {
    expect(parseQuantity("250m")).toBe(0.25);
    expect(parseQuantity("2Gi")).toBe(2 * 1024 ** 3);
    expect(parseQuantity("1")).toBe(1);
    expect(() => parseQuantity("lots")).toThrow();
  });

  describe("the checks catch broken manifests", () => {
    const cases: Array<[string, (m: Manifests) => void, RegExp]> = [
      [
        "a Service selector that matches no pods",
        (m) => (find(m, "Service", "media").spec.selector = { "app.kubernetes.io/name": "medai" }),
        /Service media: selector matches 0 Deployments/,
      ],
      [
        "a Deployment selector that misses its pods",
        (m) => (find(m, "Deployment", "media").spec.selector.matchLabels = { app: "media" }),
        /Deployment media: selector does not match its pod template labels/,
      ],
      [
        "a Service targetPort that is no container port",
        (m) => (find(m, "Service", "management").spec.ports[0].targetPort = "web"),
        /Service management: targetPort web/,
      ],
      [
        "a readiness probe on a wrong port",
        (m) => (container(m, "media").readinessProbe.httpGet.port = 8080),
        /readinessProbe port 8080 is not a container port/,
      ],
      [
        "a liveness probe on a wrong path",
        (m) => (container(m, "management").livenessProbe.httpGet.path = "/health"),
        /livenessProbe path \/health, expected \/healthz/,
      ],
      [
        "a missing readiness probe",
        (m) => delete container(m, "media").readinessProbe,
        /Deployment media: no readinessProbe/,
      ],
      [
        "a containerPort that differs from the port variable",
        (m) => (container(m, "media").ports[0].containerPort = 8080),
        /no containerPort 3001 \(MEDIA_PORT\)/,
      ],
      [
        "a ConfigMap that does not exist",
        (m) => (container(m, "media").envFrom[1].configMapRef.name = "media-settings"),
        /envFrom ConfigMap media-settings does not exist/,
      ],
      [
        "a Secret that does not exist",
        (m) => (container(m, "management").envFrom[3].secretRef.name = "mgmt-secrets"),
        /envFrom Secret mgmt-secrets does not exist/,
      ],
      [
        "a secretKeyRef to a missing key",
        (m) =>
          (container(m, "media").env = [
            { name: "MEDIA_SIGNING_KEY", valueFrom: { secretKeyRef: { name: "media-secrets", key: "SIGNING" } } },
          ]),
        /Secret media-secrets key SIGNING does not exist/,
      ],
      [
        "a typo in a ConfigMap key",
        (m) => {
          const d = find(m, "ConfigMap", "media-config").data;
          d.CACHE_MEMORY = d.CACHE_MEMORY_BYTES;
          delete d.CACHE_MEMORY_BYTES;
        },
        /CACHE_MEMORY: not a variable of the media service/,
      ],
      [
        "a missing production variable",
        (m) => delete find(m, "Secret", "media-secrets").stringData.REDIS_URL,
        /REDIS_URL: required in production, not set/,
      ],
      [
        "an invalid value",
        (m) => (find(m, "ConfigMap", "management-config").data.MEDIA_PUBLIC_URL = "media.example.com"),
        /Deployment management: the service's config loader rejects it: .*MEDIA_PUBLIC_URL/,
      ],
      [
        "a URL host that is no Service",
        (m) => (find(m, "Secret", "management-secrets").stringData.DATABASE_URL = "postgresql://u:p@pg:5432/media"),
        /DATABASE_URL host pg is not a Service/,
      ],
      [
        "a URL port the Service does not expose",
        (m) => (find(m, "ConfigMap", "storage-config").data.S3_ENDPOINT = "http://object-store:9900"),
        /S3_ENDPOINT port 9900 is not a port of Service object-store/,
      ],
      [
        "an HPA targeting a missing Deployment",
        (m) => (find(m, "HorizontalPodAutoscaler", "media").spec.scaleTargetRef.name = "media-service"),
        /scaleTargetRef Deployment\/media-service does not exist/,
      ],
      [
        "an HPA on CPU without CPU requests",
        (m) => delete container(m, "media").resources.requests.cpu,
        /has no cpu request/,
      ],
      [
        "a request above its limit",
        (m) => (container(m, "management").resources.requests.memory = "2Gi"),
        /memory request above limit/,
      ],
      [
        "a file missing from the kustomization",
        (m) => (m.kustomization.resources = m.kustomization.resources.filter((r: string) => r !== "media.yaml")),
        /media.yaml is not listed in kustomization resources/,
      ],
      [
        "a kustomization resource that does not exist",
        (m) => m.kustomization.resources.push("ingress.yaml"),
        /resource ingress.yaml does not exist/,
      ],
      [
        "an object in another namespace",
        (m) => (find(m, "Service", "media").metadata.namespace = "default"),
        /namespace default, kustomization uses media-platform/,
      ],
      [
        "running as root",
        (m) => (find(m, "Deployment", "media").spec.template.spec.securityContext.runAsNonRoot = false),
        /Deployment media: runAsNonRoot is not true/,
      ],
      [
        "a read-only root without /tmp",
        (m) => (container(m, "media").volumeMounts = []),
        /read-only root filesystem without a \/tmp volume/,
      ],
      [
        "a mount without a volume",
        (m) => (find(m, "Deployment", "management").spec.template.spec.volumes = [{ name: "tmp", emptyDir: {} }]),
        /volumeMount data has no volume/,
      ],
      [
        "a cache bigger than the pod",
        (m) => (find(m, "ConfigMap", "media-config").data.CACHE_MEMORY_BYTES = String(3 * 1024 ** 3)),
        /CACHE_MEMORY_BYTES .* more than half the memory limit/,
      ],
      [
        "a grace period shorter than the request timeout",
        (m) => (find(m, "Deployment", "media").spec.template.spec.terminationGracePeriodSeconds = 10),
        /terminationGracePeriodSeconds shorter than MEDIA_REQUEST_TIMEOUT_MS/,
      ],
      [
        "different buckets for the two services",
        (m) => (container(m, "media").env = [{ name: "S3_BUCKET", value: "other-bucket" }]),
        /storage differs: .*S3_BUCKET/,
      ],
      [
        "an image kustomize cannot retarget",
        (m) => (container(m, "media").image = "ghcr.io/acme/media:1"),
        /image ghcr.io\/acme\/media is not in kustomization images/,
      ],
      [
        "a PDB that selects nothing",
        (m) => (find(m, "PodDisruptionBudget", "media").spec.selector.matchLabels = { app: "x" }),
        /PodDisruptionBudget media: selector matches no Deployment/,
      ],
    ];
    test.each(cases)("%s", (_name, breakIt, expected) => {
      const m = copy();
      breakIt(m);
      expect(k8sProblems(m).join("\n")).toMatch(expected);
    });
  });
});
