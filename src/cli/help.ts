/**
 * Help texts of the `starpo` command (commander `addHelpText('after', ...)`): examples for every
 * command, and in the top-level help the exit codes, the `--verbose` flag and the server environment.
 * Kept apart from the command registrations in main.ts; `applyHelp` runs once they are all registered.
 */
import type { Command } from 'commander';
import { EXIT } from './exit_codes';

/** Example command lines (after `$ `) by command path ("config check", "infra up", ...). */
const EXAMPLES: Record<string, string[]> = {
  train: [
    'starpo train configs/frozen_lake.yaml',
    'starpo train configs/starpo_s_frozen_lake.yaml max_steps=10 rollout_filter_ratio=0.5 --run-id my-run',
    'starpo train configs/frozen_lake.yaml pretrain=exported/frozen-lake warmup.type=none',
    'starpo train configs/frozen_lake.yaml --no-workers      # workers run elsewhere (starpo worker)',
    'starpo train configs/frozen_lake.yaml --backend tensorflow      # native TensorFlow (starpo backend install)',
  ],
  resume: [
    'starpo resume frozen_lake-20261129-231500',
    'starpo resume my-run --rollout-workers 1',
    'starpo resume lr-sweep      # a sweep: finish what is missing',
  ],
  sweep: [
    'starpo sweep configs/frozen_lake_solver.yaml --seeds 3',
    'starpo sweep configs/frozen_lake_solver.yaml max_steps=100 --seeds 3 --grid actor_train.training_args.learning_rate=1e-4,3e-4 --parallel 2 --sweep-id lr-sweep',
    'starpo sweep configs/bandit.yaml --seeds 3 --grid rollout_filter_ratio=1,0.5 --grid warmup.train_steps=0,100',
  ],
  'sweep-json': [
    'starpo sweep-json configs/frozen_lake_solver.yaml --seeds 3 --sweep-id my-sweep -o sweep.json',
    'eval "$(starpo infra env)"     # the temporal CLI reads TEMPORAL_ADDRESS: the servers as they run',
    'temporal workflow start --type starpoSweep --task-queue starpo --workflow-id my-sweep --input-file sweep.json',
  ],
  eval: [
    'starpo eval frozen_lake-20261129-231500                # its latest checkpoint',
    'starpo eval my-run --step 10 --episodes 64 --json',
    'starpo eval runs/my-run/checkpoints/step-000030/manifest.json --config configs/frozen_lake.yaml',
  ],
  export: [
    'starpo export frozen_lake-20261129-231500 --to exported/frozen-lake          # latest checkpoint',
    'starpo export my-run --step 0 --to exported/warm-up                          # the step-0 policy',
    'starpo train configs/frozen_lake.yaml pretrain=exported/frozen-lake warmup.type=none   # train on from it',
  ],
  generate: [
    'starpo generate --model tiny --prompt "Hello"',
    'starpo generate --model exported/frozen-lake --chat chat.json --no-do-sample --max-new-tokens 64',
    'starpo generate --run frozen_lake-20261129-231500 --step 20 --prompt "Turn 1: ..." --json',
    'starpo generate --model ~/models/Qwen2.5-0.5B-Instruct --prompt "2+2=" --score "4" --json',
    'echo \'[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]\' | starpo generate --model tiny --chat -',
  ],
  report: ['starpo report frozen_lake-20261129-231500', 'starpo report my-run -o my-run.html'],
  track: [
    'starpo track my-run                                   # the steps its track_with trackers lack',
    'starpo track my-run --to tensorboard --log-dir tb      # a run without track_with, or into another folder',
    'starpo track lr-sweep --log-dir tb                     # every run of a sweep, under tb/lr-sweep/<runId>',
  ],
  trajectories: [
    'starpo trajectories my-run --step 3',
    'starpo trajectories my-run --step 3 --tag FrozenLake --group 2',
    'starpo trajectories my-run --step 10 --split val',
  ],
  worker: [
    'starpo worker --role all',
    'starpo worker --role update --backend tensorflow      # after starpo backend install',
    'TEMPORAL_ADDRESS=10.0.0.5:7233 S3_ENDPOINT=http://10.0.0.5:9000 S3_ACCESS_KEY=... S3_SECRET_KEY=... starpo worker --role rollout',
    'S3_ENDPOINT=https://s3.eu-west-1.amazonaws.com S3_REGION=eu-west-1 S3_ACCESS_KEY=... S3_SECRET_KEY=... starpo worker --role update --profile cloud',
  ],
  'run-json': [
    'starpo run-json configs/frozen_lake.yaml -o run.json --run-id my-run',
    'eval "$(starpo infra env)"     # the temporal CLI reads TEMPORAL_ADDRESS: the servers as they run',
    'temporal workflow start --type starpoTraining --task-queue starpo --workflow-id my-run --input-file run.json',
  ],
  config: ['starpo config check configs/frozen_lake.yaml', 'starpo config print configs/examples/agent_val_frozen_lake.yaml seed=7'],
  'config check': [
    'starpo config check configs/examples/agent_val_frozen_lake.yaml',
    'starpo config check configs/frozen_lake.yaml max_steps=10 pretrain=exported/frozen-lake',
  ],
  'config print': [
    'starpo config print configs/frozen_lake.yaml',
    'starpo config print configs/examples/agent_val_frozen_lake.yaml max_tokens_per_step=32 seed=7',
  ],
  status: ['starpo status frozen_lake-20261129-231500', 'starpo status my-run --json', 'starpo status lr-sweep      # a sweep: its runs'],
  pause: ['starpo pause my-run', 'starpo pause lr-sweep      # a sweep: no run starts, running runs pause'],
  unpause: ['starpo unpause my-run'],
  stop: ['starpo stop my-run', 'starpo stop my-run --reason "enough for the demo"', 'starpo stop sweep-3 --namespace team-sweeps'],
  list: [
    'starpo list',
    'starpo list --query \'StarpoConfig = "frozen_lake" AND ExecutionStatus = "Running"\' --limit 10',
    'starpo list --json',
  ],
  infra: ['starpo infra up', 'starpo infra status --json', 'eval "$(starpo infra env)"', 'starpo infra down'],
  'infra up': ['starpo infra up', 'starpo infra up --json --state-dir /tmp/starpo-infra'],
  'infra down': ['starpo infra down'],
  'infra status': ['starpo infra status', 'starpo infra status --json'],
  'infra env': ['eval "$(starpo infra env)"     # then: temporal workflow list', 'starpo infra env --state-dir /tmp/starpo-infra'],
  backend: ['starpo backend install', 'starpo backend status', 'STARPO_BACKEND=tensorflow npm start'],
  'backend install': ['starpo backend install', 'npm run backend:install', 'starpo backend install --force      # rebuild'],
  'backend status': ['starpo backend status', 'starpo backend status --json'],
  'backend check': [
    'starpo backend check                                   # Qwen2.5-0.5B shape, on the backend a worker uses',
    'starpo backend check --backend tensorflow --layers 2 --batch 4 --length 128 --json',
    'starpo backend check --backend tensorflow --layers 24 --gradient-checkpointing off   # the whole model, intermediates kept',
    "starpo backend check --backend wasm --layers 1 --vocab 1000      # small enough for wasm's 4 GB",
  ],
  model: ['starpo model get smollm2-135m-instruct', 'starpo model list'],
  'model get': [
    'starpo model get smollm2-135m-instruct',
    'starpo train configs/smollm2_bandit.yaml pretrain=$(starpo model get smollm2-135m-instruct)',
  ],
  'model convert': ['starpo model convert model.Q4_K_M.gguf ./my-model      # then pretrain: ./my-model'],
  'model list': ['starpo model list'],
  env: ['starpo env serve gymnasium:FrozenLake-v1 --port 8100'],
  'env serve': [
    'starpo env serve gymnasium:FrozenLake-v1 --port 8100 --config \'{"format_penalty": -0.01}\'   # env_config.url: http://127.0.0.1:8100',
    'starpo env serve reasoning_gym:basic_arithmetic --config \'{"max_terms": 3}\'',
    'starpo env serve gem:game:GuessTheNumber-v0-easy --config \'{"max_turns": 6}\'   # a GEM env',
    'starpo env serve test/fixtures/openenv/guess_env.py:GuessEnv --port 8200   # a text env class of your own',
  ],
};

/** The exit codes, one line each (top-level help, docs/operating.md "Exit codes and errors"). */
export const EXIT_CODE_LINES = [
  `${EXIT.ok}  ok`,
  `${EXIT.runFailed}  the run failed (or an unexpected error)`,
  `${EXIT.badInput}  bad input: config, arguments, an unknown run id, a request the run refuses`,
  `${EXIT.infraUnavailable}  infra unavailable: Temporal or S3 unreachable, server binaries not installable, no control worker answering, a native backend missing or not buildable`,
];

const TOP_LEVEL = `
Exit codes:
${EXIT_CODE_LINES.map((l) => `  ${l}`).join('\n')}
Errors print one message without a stack trace; add --verbose for stack traces.

Servers: the local Temporal and S3 servers (\`starpo infra up\`, started by \`train\` when needed), or
existing ones: Temporal from a temporal.toml profile (--profile, TEMPORAL_CONFIG_FILE) or TEMPORAL_ADDRESS
(TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*), S3 from S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY
(S3_BUCKET, S3_REGION, S3_SESSION_TOKEN; a private CA through NODE_EXTRA_CA_CERTS). See docs/operating.md.

Run \`starpo <command> --help\` for a command's options and examples.`;

/** "train", "config check", ...: the command's names below the program. */
function pathOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Every command below `cmd`, depth first. */
function commandsOf(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...commandsOf(c)]);
}

/** Adds the examples of every registered command and the top-level exit codes to `program`'s help. */
export function applyHelp(program: Command): void {
  program.addHelpText('after', TOP_LEVEL);
  for (const cmd of commandsOf(program)) {
    const examples = EXAMPLES[pathOf(cmd)];
    if (examples) cmd.addHelpText('after', `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}`);
  }
}
