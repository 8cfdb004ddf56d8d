import { InvalidBlobKeyError, assertValidBlobKey, attributesKey, isValidBlobKey, originalKey } from "../src";
import { TRAVERSAL_KEYS } from "./support/blob-store-contract";

describe("blob key grammar", () => {
  test.each([
    originalKey("6f1c2a4e-8a8b-4d7e-9d2e-1b2c3d4e5f60"),
    attributesKey("6f1c2a4e-8a8b-4d7e-9d2e-1b2c3d4e5f60"),
    "a",
    "results/abc.webp",
    "a/b/c/d",
    "x_y-z.1",
    ".hidden",
    "...",
    "a".repeat(200),
  ])("%j is valid", (key) => {
    expect(isValidBlobKey(key)).toBe(true);
    expect(() => assertValidBlobKey(key)).not.toThrow();
  });

  test.each([...TRAVERSAL_KEYS, "a".repeat(201), `${"abcdefghi/".repeat(103)}x`, "a/../b", "./a", "C:\\x"])(
    "%j is invalid",
    (key) => {
      expect(isValidBlobKey(key)).toBe(false);
      expect(() => assertValidBlobKey(key)).toThrow(InvalidBlobKeyError);
    },
  );

  test("non-strings are invalid", () => {
    expect(isValidBlobKey(undefined)).toBe(false);
    expect(isValidBlobKey(42)).toBe(false);
  });
});
