// infra/minio/create-bucket.sh run for real under /bin/sh, with a fake `mc` first on PATH that
// records its arguments (no MinIO binary can be installed here; the compose stack and the
// GitHub workflow run the script against real MinIO).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { repoPath } from "./support/files";

const SCRIPT = repoPath("infra/minio/create-bucket.sh");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  calls: string[][];
  policy: unknown;
}

/** `failAliasTimes`: how many `mc alias set` calls fail first (MinIO still starting). `failOn`: a subcommand that fails. */
function run(
  env: Record<string, string>,
  opts: { failAliasTimes?: number; failOn?: string; userInfo?: string } = {},
): Run {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "minio-init-"));
  try {
    const log = path.join(dir, "calls.jsonl");
    const counter = path.join(dir, "alias-count");
    fs.writeFileSync(counter, "0");
    const fake = `#!${process.execPath}
const fs = require("fs");
const args = process.argv.slice(2);
const entry = { args };
// Keep the policy document the script hands to "mc admin policy create".
if (args[0] === "admin" && args[1] === "policy" && args[2] === "create") entry.policy = fs.readFileSync(args[5], "utf8");
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(entry) + "\\n");
if (args[0] === "alias") {
  const n = Number(fs.readFileSync(${JSON.stringify(counter)}, "utf8")) + 1;
  fs.writeFileSync(${JSON.stringify(counter)}, String(n));
  process.exit(n <= ${opts.failAliasTimes ?? 0} ? 1 : 0);
}
if (args.slice(0, 3).join(" ") === "admin user info") process.stdout.write(${JSON.stringify(opts.userInfo ?? "")});
if (${JSON.stringify(opts.failOn ?? "")} && args.join(" ").startsWith(${JSON.stringify(opts.failOn ?? "")})) process.exit(1);
`;
    fs.writeFileSync(path.join(dir, "mc"), fake, { mode: 0o755 });
    const r = spawnSync("/bin/sh", [SCRIPT], {
      env: { PATH: `${dir}:/usr/bin:/bin`, ...env },
      encoding: "utf8",
      timeout: 30_000,
    });
    const entries = fs.existsSync(log)
      ? fs
          .readFileSync(log, "utf8")
          .trim()
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { args: string[]; policy?: string })
      : [];
    const policy = entries.find((e) => e.policy)?.policy;
    return {
      code: r.status,
      stdout: r.stdout,
      stderr: r.stderr,
      calls: entries.map((e) => e.args),
      policy: policy ? JSON.parse(policy) : undefined,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const BASE = {
  MINIO_URL: "http://minio:9000",
  MINIO_ROOT_USER: "root",
  MINIO_ROOT_PASSWORD: "root-password",
  S3_BUCKET: "media-assets",
};

describe("infra/minio/create-bucket.sh", () => {
  test("is valid POSIX sh", () => {
    const r = spawnSync("/bin/sh", ["-n", SCRIPT], { encoding: "utf8" });
    expect(r.status).toBe(0);
  });

  test("waits for MinIO, then creates the bucket, a bucket-scoped policy and the service account", () => {
    const r = run({ ...BASE, S3_ACCESS_KEY_ID: "svc", S3_SECRET_ACCESS_KEY: "svc-secret-123" }, { failAliasTimes: 2 });
    expect(r.code).toBe(0);
    expect(r.calls).toEqual([
      ["alias", "set", "local", "http://minio:9000", "root", "root-password"],
      ["alias", "set", "local", "http://minio:9000", "root", "root-password"],
      ["alias", "set", "local", "http://minio:9000", "root", "root-password"],
      ["mb", "--ignore-existing", "local/media-assets"],
      ["anonymous", "set", "none", "local/media-assets"],
      ["admin", "user", "add", "local", "svc", "svc-secret-123"],
      ["admin", "policy", "create", "local", "media-assets-rw", expect.any(String)],
      ["admin", "policy", "attach", "local", "media-assets-rw", "--user", "svc"],
    ]);
    expect(r.policy).toEqual({
      Version: "2012-10-17",
      Statement: [
        expect.objectContaining({
          Effect: "Allow",
          Resource: ["arn:aws:s3:::media-assets"],
          Action: expect.arrayContaining(["s3:ListBucket"]),
        }),
        expect.objectContaining({
          Effect: "Allow",
          Resource: ["arn:aws:s3:::media-assets/*"],
          Action: expect.arrayContaining(["s3:GetObject", "s3:PutObject", "s3:DeleteObject"]),
        }),
      ],
    });
    expect(r.stdout).toContain("bucket media-assets ready");
  });

  test("a re-run where the policy is already attached succeeds; a failed attach otherwise fails the job", () => {
    const env = { ...BASE, S3_ACCESS_KEY_ID: "svc", S3_SECRET_ACCESS_KEY: "svc-secret-123" };
    const again = run(env, {
      failOn: "admin policy attach",
      userInfo: "AccessKey: svc\nStatus: enabled\nPolicyName: media-assets-rw\n",
    });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("policy media-assets-rw already attached");
    expect(again.calls[again.calls.length - 1]).toEqual(["admin", "user", "info", "local", "svc"]);
    const broken = run(env, { failOn: "admin policy attach", userInfo: "AccessKey: svc\nPolicyName: readonly\n" });
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain("could not attach policy media-assets-rw to svc");
  });

  test("with the root credentials only (the GitHub workflow), creates just the bucket", () => {
    const r = run(BASE);
    expect(r.code).toBe(0);
    expect(r.calls.map((c) => c.slice(0, 2).join(" "))).toEqual(["alias set", "mb --ignore-existing", "anonymous set"]);
  });

  test("gives up with a message when MinIO never answers", () => {
    const r = run({ ...BASE, MINIO_WAIT_SECONDS: "2" }, { failAliasTimes: 1000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("not reachable after 2s");
    expect(r.calls.some((c) => c[0] === "mb")).toBe(false);
  });

  test("fails when creating the bucket fails (so service_completed_successfully holds the services back)", () => {
    const r = run(BASE, { failOn: "mb" });
    expect(r.code).not.toBe(0);
    expect(r.stdout).not.toContain("ready");
  });

  test("refuses to run without a bucket name", () => {
    const { S3_BUCKET: _omit, ...rest } = BASE;
    const r = run(rest);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("S3_BUCKET is required");
    expect(r.calls).toEqual([]);
  });
});
