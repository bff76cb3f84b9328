/**
 * sequence_length against the first turn of every tag, train and val: the first prompt rendered by the
 * rollout's own code (rollout/first_turn.ts) with the run's tokenizer and chat template, plus one reply's
 * budget. A config whose first rollout would stop on it is refused at `config check` and before a run
 * starts. The first prompt depends on the env's reset state, so the states measured are those the run
 * plays first (step 0's train groups and the first validation's), at most SEEDS_PER_TAG per tag and split.
 */
import type { RunConfig } from '../contract';
import { TINY_PRESET } from '../model/config';
import { readPretrainedTokenizer } from '../model/hf/folder';
import { type ChatTokenizer, charTokenizer } from '../model/tokenizer';
import { firstPromptTokens, firstTurnProblem, replyBudget, validAnswers } from '../rollout/first_turn';
import { generatingArgsOf, planShards } from '../rollout/plan';

/** The run's tokenizer: the tiny preset's, or the model folder's. */
export const tokenizerOf = (cfg: RunConfig): ChatTokenizer =>
  cfg.pretrain === TINY_PRESET ? charTokenizer() : readPretrainedTokenizer(cfg.pretrain);

/** Reset states measured per tag and split: enough for envs whose observation size varies, quick for config check. */
const SEEDS_PER_TAG = 16;

/** The longest first prompt (tokens) of each tag of a split, over the seeds it plays first. */
function longestFirstPrompts(cfg: RunConfig, split: 'train' | 'val', tokenizer: ChatTokenizer): Map<string, number> {
  const seeds = new Map<string, Set<number>>();
  for (const group of planShards(cfg, split, 0).flat()) {
    const mine = seeds.get(group.tag) ?? new Set<number>();
    if (mine.size < SEEDS_PER_TAG) mine.add(group.seed);
    seeds.set(group.tag, mine);
  }
  const longest = new Map<string, number>();
  for (const [tag, tagSeeds] of seeds) {
    for (const seed of tagSeeds) {
      let tokens: number | null;
      try {
        tokens = firstPromptTokens(tokenizer, cfg.custom_envs[tag], seed);
      } catch {
        continue; // an env that throws at reset fails its group at run time (replaced, then dropped), not the config
      }
      if (tokens === null) break; // an env served by another process: the rollout checks its first turn
      longest.set(tag, Math.max(longest.get(tag) ?? 0, tokens));
    }
  }
  return longest;
}

/**
 * One line per tag whose first turn sequence_length cannot hold, naming the value, the tag, the env
 * managers that play it and the tokens needed. Call it on a config without other problems (envs, tags
 * and pretrain valid).
 */
export function firstTurnProblems(cfg: RunConfig, tokenizer: ChatTokenizer): string[] {
  const worst = new Map<string, { prompt: number; reply: number; managers: string[] }>();
  for (const split of ['train', 'val'] as const) {
    const maxNewTokens = generatingArgsOf(cfg, split).max_new_tokens;
    for (const [tag, prompt] of longestFirstPrompts(cfg, split, tokenizer)) {
      const reply = replyBudget(cfg.custom_envs[tag], maxNewTokens);
      if (!firstTurnProblem(cfg.sequence_length, tag, prompt, reply)) continue;
      const seen = worst.get(tag);
      const managers = [...(seen?.managers ?? []), `${split}_env_manager`];
      worst.set(tag, seen && seen.prompt + seen.reply >= prompt + reply ? { ...seen, managers } : { prompt, reply, managers });
    }
  }
  return [...worst].map(
    ([tag, w]) =>
      `\`sequence_length\`: ${firstTurnProblem(cfg.sequence_length, `${tag} (${w.managers.join(' and ')})`, w.prompt, w.reply)}`,
  );
}

/** The key that sets a tag's reply budget in a split (replyBudget: the smaller of the two). */
function budgetKey(cfg: RunConfig, split: 'train' | 'val', tag: string): string {
  if (cfg.custom_envs[tag].max_tokens_per_step <= generatingArgsOf(cfg, split).max_new_tokens)
    return `custom_envs.${tag}.max_tokens_per_step`;
  const manager = `${split}_env_manager` as const;
  return cfg[manager].generating_args?.max_new_tokens !== undefined
    ? `${manager}.generating_args.max_new_tokens`
    : 'actor_infer.generating_args.max_new_tokens';
}

/**
 * One warning per reply budget that cannot hold every valid answer of its tag: the answers longer than the
 * budget are always cut off before `</answer>` and parse as invalid, so those actions can never be taken
 * (none at all when even the shortest does not fit). ROLL runs such a config too. Call it on a config without problems.
 */
export function replyBudgetWarnings(cfg: RunConfig, tokenizer: ChatTokenizer): string[] {
  const short = new Map<string, { key: string; budget: number; tag: string; cut: ReturnType<typeof validAnswers>; managers: string[] }>();
  for (const split of ['train', 'val'] as const) {
    const manager = split === 'train' ? cfg.train_env_manager : cfg.val_env_manager;
    for (const tag of new Set(manager.tags)) {
      const budget = replyBudget(cfg.custom_envs[tag], generatingArgsOf(cfg, split).max_new_tokens);
      const cut = validAnswers(tokenizer, cfg.custom_envs[tag]).filter((a) => a.tokens > budget);
      if (cut.length === 0) continue;
      const key = budgetKey(cfg, split, tag);
      const seen = short.get(`${key} ${tag}`);
      short.set(`${key} ${tag}`, { key, budget, tag, cut, managers: [...(seen?.managers ?? []), `${split}_env_manager`] });
    }
  }
  return [...short.values()].map((w) => {
    const longest = w.cut.reduce((a, b) => (b.tokens > a.tokens ? b : a));
    return (
      `\`${w.key}\` (${w.budget}) cannot hold every valid answer of tag ${w.tag} (${w.managers.join(' and ')}): ` +
      `${w.cut.map((a) => a.action).join(', ')} never ${w.cut.length === 1 ? 'fits' : 'fit'} (up to ${longest.text}, ${longest.tokens} tokens), so those replies are ` +
      `cut off and parse as invalid; allowed: >= ${longest.tokens}`
    );
  });
}
