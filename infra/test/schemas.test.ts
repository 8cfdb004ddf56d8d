import { loadManifests } from "./support/k8s-checks";
import { parseYamlStrict, readRepoFile, type Json } from "./support/files";
import { actionlintProblems, composeSchemaProblems, k8sSchemaProblems } from "./support/schemas";
import { WORKFLOW } from "./support/workflow-checks";

const compose = (): Json => parseYamlStrict(readRepoFile("docker-compose.yml"));
const k8sObjects = (): Json[] => Object.values(loadManifests().files).flat();

describe("docker-compose.yml against the Compose Specification schema", () => {
  test("is valid", () => {
    expect(composeSchemaProblems(compose())).toEqual([]);
  });
  test.each<[string, (c: Json) => void, RegExp]>([
    [
      "a misspelled key",
      (c) => (c.services.media.healthckeck = c.services.media.healthcheck),
      /\/services\/media must NOT have additional properties \(healthckeck\)/,
    ],
    [
      "an unknown depends_on condition",
      (c) => (c.services.media.depends_on.redis.condition = "service_ready"),
      /depends_on\/redis\/condition must be equal to one of the allowed values/,
    ],
    [
      "a healthcheck of the wrong type",
      (c) => (c.services.redis.healthcheck.retries = "many"),
      /healthcheck\/retries must be/,
    ],
  ])("catches %s", (_n, breakIt, expected) => {
    const c = structuredClone(compose());
    breakIt(c);
    expect(composeSchemaProblems(c).join("\n")).toMatch(expected);
  });
});

describe("infra/k8s against the Kubernetes API schemas", () => {
  test("every object is valid for its apiVersion/kind", () => {
    const objects = k8sObjects();
    expect(objects.length).toBeGreaterThanOrEqual(12);
    expect(k8sSchemaProblems(objects)).toEqual([]);
  });
  test("catches type errors, missing required fields and unknown API versions", () => {
    const objects = structuredClone(k8sObjects());
    const media = objects.find((o) => o.kind === "Deployment" && o.metadata.name === "media");
    media.spec.template.spec.containers[0].ports[0].containerPort = "3001";
    const hpa = objects.find((o) => o.kind === "HorizontalPodAutoscaler");
    hpa.apiVersion = "autoscaling/v3";
    const svc = objects.find((o) => o.kind === "Service" && o.metadata.name === "management");
    delete svc.spec.ports[0].port;
    const problems = k8sSchemaProblems(objects).join("\n");
    expect(problems).toMatch(/Deployment\/media: .*containerPort must be integer/);
    expect(problems).toMatch(/HorizontalPodAutoscaler\/media: unknown apiVersion\/kind autoscaling\/v3/);
    expect(problems).toMatch(/Service\/management: .*must have required property '?port'?/);
  });
});

describe(".github/workflows/ci.yml under actionlint", () => {
  test("is clean", async () => {
    expect(await actionlintProblems(readRepoFile(WORKFLOW), WORKFLOW)).toEqual([]);
  });
  test("catches a bad expression and an unknown key", async () => {
    const broken = readRepoFile(WORKFLOW)
      .replace("group: ci-${{ github.ref }}", "group: ci-${{ github.reff }}")
      .replace("timeout-minutes: 45", "timeout-minute: 45");
    const problems = (await actionlintProblems(broken, WORKFLOW)).join("\n");
    expect(problems).toMatch(/property "reff" is not defined/);
    expect(problems).toMatch(/unexpected key "timeout-minute"/);
  });
});
