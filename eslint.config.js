// Lint: correctness rules only (formatting is prettier's job). typescript-eslint's recommended
// set over every TypeScript file; the few rules turned off say why.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**'] },
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
    files: ['test/**/*.ts'],
    rules: {
      // chai's property assertions (`expect(x).to.not.be.empty`) are expressions by design.
      '@typescript-eslint/no-unused-expressions': 'off',
      // Tests read arbitrary YAML and JSON documents (compose files, manifests, answers) and probe them.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
