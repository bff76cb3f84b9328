/**
 * The dependency order of starpo, checked by `npm run lint:deps` (first step of `npm test`): no
 * import cycles, and each folder of src/ imports only the folders before it in ORDER. infra/ stands
 * beside the order (any folder may import it; it imports only src/contract). bench/ and test/ may
 * import anything, but their cycles count too. docs/design.md shows the same order.
 */
const ORDER = [
  'contract', // the types and names that cross a process or Temporal boundary; imports nothing of starpo
  'util', // seeded PRNG
  'config', // YAML composition, overrides, interpolation, messages (the schema itself is in contract)
  'envs',
  'model',
  'rollout',
  'algo',
  'storage',
  'trackers', // ROLL's track_with: a run's stored metrics written to TensorBoard event files
  'preflight', // config loading and the checks that need envs and the model
  'workflows', // deterministic workflow code: the contract's activity types, never activity code
  'activities',
  'workers',
  'report',
  'cli',
];

const layerRules = ORDER.map((name, i) => ({
  name: `order-${name}`,
  comment: `src/${name} may import only ${ORDER.slice(0, i).join(', ') || 'nothing of starpo'} (and infra/)`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: { path: `^src/(${ORDER.slice(i + 1).join('|')})/` },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import cycles between files (and so none between folders)',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'contract-imports-nothing',
      comment: 'src/contract imports nothing of starpo (zod and Temporal type definitions only)',
      severity: 'error',
      from: { path: '^src/contract/' },
      to: { path: '^(src|infra)/', pathNot: '^src/contract/' },
    },
    {
      name: 'infra-imports-only-contract',
      comment: 'infra/ stands beside the order: it imports only src/contract',
      severity: 'error',
      from: { path: '^infra/' },
      to: { path: '^src/', pathNot: '^src/contract/' },
    },
    {
      name: 'workflow-bundle-without-schema',
      comment: 'code the workflow bundle carries imports contract files without zod, never the index (types are fine)',
      severity: 'error',
      from: { path: '^src/(workflows/|rollout/(plan|metrics)[.]ts$|storage/errors[.]ts$|util/)' },
      to: { path: '^src/contract/(index|run_config|run_config_blocks|store|trajectory)[.]ts$|node_modules/zod/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'src-folders-are-known',
      comment: 'every folder of src/ has a place in the order (add a new one to ORDER)',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: `^src/(${ORDER.join('|')})/` },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.cjs', '.json'] },
  },
};
