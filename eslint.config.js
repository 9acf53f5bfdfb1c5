// Lint: correctness rules only (formatting is prettier's job). typescript-eslint's recommended
// set over every TypeScript file; the few rules turned off say why.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // `_`-prefixed names are deliberately unused (callback signatures, destructured rest).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Pages served to browsers by the sandbox stand-ins and the tests' scripts run in a browser.
    files: ['sandbox/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { globals: { ...globals.node, ...globals.browser, ...globals.mocha } },
  },
  {
    // A function does one thing: production code holds a length its readers can take in at once
    // (blank lines and comments not counted), so a long one is split by reason to change.
    files: ['config/**/*.ts', 'policies/**/*.ts', 'gateway/**/*.ts', 'sandbox/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  {
    // Split after the views and the stand-in move into their folders (their files change there
    // first): FileStreamFilter.write, the stand-in's route installers, bench/real-open-webui.ts main.
    files: [
      'gateway/upstream/file-stream-filter.ts',
      'bench/real-open-webui.ts',
      'sandbox/open-webui/chats.ts',
      'sandbox/open-webui/files.ts',
      'sandbox/open-webui/http.ts',
      'sandbox/open-webui/workspace-content.ts',
      'sandbox/open-webui/workspace-models.ts',
    ],
    rules: { 'max-lines-per-function': 'off' },
  },
  {
    // Split with the per-request work changing them now (the pipeline's upgrade, the sign-in's
    // cookies): Pipeline.upgrade, mountSignIn.
    files: ['gateway/pipeline/handle.ts', 'gateway/auth/sign-in.ts'],
    rules: { 'max-lines-per-function': 'off' },
  },
  {
    // Tests are exempt: a test reads top to bottom as the story it tells (set up, act, see), and a
    // describe block is one function however many tests it holds.
    files: ['test/**/*.ts'],
    rules: {
      // chai's property assertions (`expect(x).to.not.be.empty`) are expressions by design.
      '@typescript-eslint/no-unused-expressions': 'off',
      // Tests read arbitrary YAML and JSON documents (compose files, manifests, answers) and probe them.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
