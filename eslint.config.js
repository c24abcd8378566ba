// ESLint flat config (issue 27), run by `npm run lint` and in CI.
// - Every TypeScript file: typescript-eslint's type-checked recommended rules, each file checked
//   with the tsconfig that includes it (projectService: tsconfig.json for electron/, trainer/,
//   models/, common/, bench/, test/, scripts/; renderer/tsconfig.json for renderer/).
// - renderer/src: react-hooks' recommended rules (the React Compiler's checks among them).
// - Plain .js/.mjs files (launchers, scripts, test fixtures): @eslint/js's recommended rules.
// - Every eslint-disable comment says why, after " -- " (the project's rule: no `any` without a
//   reason in a comment); an unused one is an error.
// No stylistic rules: formatting is not the linter's job here.
import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

/** `// eslint-disable… -- reason`: a directive without a reason is reported. */
const disableNeedsReason = {
  meta: {
    type: "problem",
    docs: { description: "eslint-disable comments give their reason after ' -- '" },
    schema: [],
    messages: { noReason: "Say why after ' -- ' (e.g. `// eslint-disable-next-line rule -- why`)." },
  },
  create(context) {
    return {
      Program() {
        for (const c of context.sourceCode.getAllComments()) {
          const text = c.value.trim();
          if (/^eslint-disable(-next-line|-line)?(\s|$)/.test(text) && !/\s--\s+\S/.test(text)) {
            context.report({ loc: c.loc, messageId: "noReason" });
          }
        }
      },
    };
  },
};

export default tseslint.config(
  {
    ignores: ["out/**", "dist/**", "release/**", "**/node_modules/**", ".cache/**", "test-artifacts/**", "models/cache/**", ".scratch/**"],
  },
  {
    linterOptions: { reportUnusedDisableDirectives: "error" },
    plugins: { local: { rules: { "disable-needs-reason": disableNeedsReason } } },
    rules: { "local/disable-needs-reason": "error" },
  },
  js.configs.recommended,
  {
    files: ["**/*.ts", "**/*.tsx", "**/*.mts"],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Unused code is an error; a leading underscore marks a binding kept on purpose (a
      // parameter an interface requires, a field dropped from an object by destructuring).
      "@typescript-eslint/no-unused-vars": [
        "error",
        {
          args: "after-used",
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_",
          caughtErrors: "none",
          destructuredArrayIgnorePattern: "^_",
          ignoreRestSiblings: true,
        },
      ],
      // `async` without `await` is how a function keeps a Promise-returning signature (fakes in
      // tests, interface implementations) and turns a throw into a rejection: not a defect here.
      "@typescript-eslint/require-await": "off",
      // A caught error (typed unknown) may be passed on as a rejection, as it may be rethrown.
      "@typescript-eslint/prefer-promise-reject-errors": ["error", { allowThrowingUnknown: true }],
    },
  },
  {
    // node:test's test()/describe()/it() return promises the runner itself awaits.
    files: ["test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            { from: "package", package: "node:test", name: ["test", "describe", "it", "suite", "before", "after", "beforeEach", "afterEach"] },
          ],
        },
      ],
      // Tests read JSON replies through helpers typed `any` on purpose (test/helpers/api.ts says
      // why) and check each field with assert; every use of such a body is not another `any`.
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
  {
    files: ["**/*.js", "**/*.mjs", "**/*.cjs"],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ["renderer/src/**/*.ts", "renderer/src/**/*.tsx"],
    extends: [reactHooks.configs.flat["recommended-latest"]],
    languageOptions: { globals: { ...globals.browser } },
  },
);
