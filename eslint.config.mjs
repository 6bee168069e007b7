// ESLint: typescript-eslint's recommended rules on every TypeScript file, and the
// type-aware rules that catch lost promises (an un-awaited write, an async callback
// whose rejection nobody sees). `npm run lint`; `npm run lint:fix` fixes what it can.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "bin/", "dist/", "reports/", ".stryker-tmp/", "routing/validation/generated/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts", "**/*.mts"],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
    },
  },
  {
    // CommonJS entry points (the program's and the policy pack's): require is how they load.
    files: ["**/*.cjs"],
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    files: ["**/*.mjs", "**/*.cjs"],
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        require: "readonly",
        module: "writable",
        __dirname: "readonly",
        URL: "readonly",
      },
    },
  },
  {
    // The routes resource's provider is serialized by Pulumi and run by the dynamic-provider
    // host, where only require reaches the project's modules (see its comment).
    files: ["components/routes.ts"],
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    // Kubernetes objects as the policy engine and Pulumi's mocks hand them over are untyped
    // property bags; the policies and tests read them as such.
    files: ["policy/**/*.ts", "test/unit/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
