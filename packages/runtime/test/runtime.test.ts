import http from "node:http";
import { z } from "zod";
import { ConfigError, intField, listen, optionalStringField, parseEnv, serviceUrl } from "../src";

describe("serviceUrl: the address both services print", () => {
  test.each([
    ["0.0.0.0", "http://localhost:3000"],
    ["::", "http://localhost:3000"],
    ["127.0.0.1", "http://127.0.0.1:3000"],
    ["::1", "http://[::1]:3000"],
    ["media.internal", "http://media.internal:3000"],
  ])("%s -> %s", (host, url) => expect(serviceUrl(host, 3000)).toBe(url));
});

test("listen binds port 0 to a free port and reports it", async () => {
  const server = http.createServer((_req, res) => res.end("ok"));
  const { port, url } = await listen(server, 0, "127.0.0.1");
  try {
    expect(port).toBeGreaterThan(0);
    expect(url).toBe(`http://127.0.0.1:${port}`);
    expect(await (await fetch(url)).text()).toBe("ok");
  } finally {
    await new Promise((r) => server.close(r));
  }
});

test("listen rejects when the port is taken", async () => {
  const first = http.createServer();
  const { port } = await listen(first, 0, "127.0.0.1");
  try {
    await expect(listen(http.createServer(), port, "127.0.0.1")).rejects.toMatchObject({ code: "EADDRINUSE" });
  } finally {
    await new Promise((r) => first.close(r));
  }
});

describe("parseEnv", () => {
  const schema = z.object({
    WORKERS: intField(0, 8, 2, "a whole number from 0 to 8"),
    NAME: optionalStringField,
  });
  test("blank values are unset: defaults apply", () => {
    expect(parseEnv(schema, { WORKERS: " ", NAME: "" })).toEqual({ WORKERS: 2, NAME: undefined });
  });
  test("a bad value throws ConfigError naming each variable", () => {
    let error: unknown;
    try {
      parseEnv(schema, { WORKERS: "9" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      { variable: "WORKERS", message: "must be a whole number from 0 to 8" },
    ]);
    expect((error as ConfigError).message).toBe("invalid configuration: WORKERS: must be a whole number from 0 to 8");
  });
});
