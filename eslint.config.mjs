// Flat config: typescript-eslint's recommended rules over every package and service.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/generated/**", ".data/**", "coverage/**", "**/dist/**", "**/*.cjs", "jest.config.js", "services/media/test/reference/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-require-imports": "off",
    },
  },
  // The services' functions take a record past five values (an admitted request, a flight, a
  // context, a candidate depth).
  { files: ["services/*/src/**/*.ts"], rules: { "max-params": ["error", 5] } },
);
