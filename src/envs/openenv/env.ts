/**
 * The `openenv` env type: an env served by another process over OpenEnv's protocol (openenv-core on PyPI;
 * docs/envs.md "OpenEnv servers"). Each episode is one WebSocket session at `<url>/ws`: reset with the
 * group's seed, one step per reply, close at the end. Everything the server gets wrong rejects the call
 * with the server's URL and the reason, so the rollout counts the episode as an env failure.
 */
import { show } from '../../config/show';
import type { RawEnvConfig } from '../config';
import {
  checkSeed,
  type Env,
  type EnvInfo,
  type EnvOptions,
  parseAction,
  type ResetResult,
  type StepResult,
  stripSpecialTokens,
} from '../env';
import { type OpenEnvConfig, parseOpenEnvConfig } from './config';
import { ensureLocalServer } from './local_server';
import { type ObservationAnswer, OpenEnvSession } from './session';

/** The server's base URL as given (a trailing /ws dropped), and the URLs of its session and health endpoints. */
export function serverUrls(url: string): { ws: string; health: string } {
  const base = url.replace(/\/ws$/, '');
  const wsBase = base.replace(/^http(s?):/, 'ws$1:');
  const httpBase = base.replace(/^ws(s?):/, 'http$1:');
  return { ws: `${wsBase}/ws`, health: `${httpBase}/health` };
}

/**
 * Asks every server of a config for GET /health (openenv-core servers have it), all at once; none for a config
 * with a command (the process that plays the env starts its server).
 * @throws Error (rejects) with one line per server that does not answer 2xx within connect_timeout_seconds
 */
export async function checkOpenEnvServers(config: OpenEnvConfig): Promise<void> {
  if (config.command !== null) return;
  const problems = await Promise.all(
    [...new Set(config.urls)].map(async (url) => {
      const { health } = serverUrls(url);
      try {
        const res = await fetch(health, { signal: AbortSignal.timeout(config.connectTimeoutSeconds * 1000) });
        await res.body?.cancel();
        return res.ok ? null : `${health} answered HTTP ${res.status}`;
      } catch (err) {
        const e = err as Error & { cause?: { code?: string; message?: string } };
        const why =
          e.name === 'TimeoutError'
            ? `no answer within ${config.connectTimeoutSeconds} s`
            : (e.cause?.code ?? e.cause?.message ?? e.message);
        return `${health} does not answer (${why})`;
      }
    }),
  );
  const bad = problems.filter((p) => p !== null);
  if (bad.length > 0) throw new Error(bad.join('; '));
}

/** Starts the server of env_config.command in this process (once) and waits for its /health; nothing without a command. */
export async function startOpenEnvServer(config: OpenEnvConfig): Promise<void> {
  if (config.command !== null) await ensureLocalServer(config.command, serverUrls(config.urls[0]).health, config.startupTimeoutSeconds);
}

const flag = (v: number | boolean | undefined): boolean | undefined =>
  v === undefined ? undefined : v === true || (typeof v === 'number' && v !== 0);

/**
 * An env played on an OpenEnv server; see OpenEnvConfig for the keys. It has no action names; it has a
 * solver only when env_config.plan_field names where the server puts its plan from each state.
 */
export class OpenEnvEnv implements Env {
  readonly envType = 'openenv';
  readonly actionNames: readonly string[] = [];
  readonly config: OpenEnvConfig;
  /** The session endpoint of the server this env id plays on. */
  readonly url: string;
  private readonly enableThink: boolean;
  private session: OpenEnvSession | null = null;
  private terminated = false;
  private steps = 0;
  private last = '';
  private plan: string[] | null = null;
  /** The server's plan from the current state (the last answer's plan_field); only with plan_field. */
  readonly solve?: () => string[] | null;

  /** @param raw env_config (validated here; throws EnvConfigError on a bad key/value) */
  constructor(raw: RawEnvConfig = {}, options: EnvOptions = {}) {
    this.config = parseOpenEnvConfig(raw);
    this.url = serverUrls(this.config.urls[(options.envId ?? 0) % this.config.urls.length]).ws;
    this.enableThink = options.enableThink ?? false;
    if (this.config.planField !== null) this.solve = () => this.plan;
  }

  /** Opens a new session (closing the last one, starting the command's server when needed) and resets it with `{seed, ...env_config.reset}`. */
  async reset(seed: number): Promise<ResetResult> {
    checkSeed(this.envType, seed);
    this.close();
    // A server this process started that has died since (a crash, a SIGKILL) is started again here, so the
    // episodes that replace the failed ones find it; a map lookup while it runs.
    await startOpenEnvServer(this.config);
    const session = new OpenEnvSession(this.url, this.config);
    this.session = session;
    const answer = await session.request({ type: 'reset', data: { seed, ...this.config.reset } });
    if (answer.done) throw new Error(`${this.url}: reset answered done: true (an episode must start unfinished)`);
    this.last = this.textOf(answer);
    this.plan = this.planOf(answer);
    this.terminated = false;
    this.steps = 0;
    return { observation: this.last, info: { env_instruction: this.config.envInstruction } };
  }

  /** Sends the reply as the action (env_config `action`) and maps the answer; closes the session when the episode ends. */
  async step(responseText: string): Promise<StepResult> {
    if (this.terminated) throw new Error('openenv.step: the episode has terminated; call reset()');
    if (this.session === null) throw new Error('openenv.step: call reset() first');
    const parsed = parseAction(responseText, this.actionNames, { enableThink: this.enableThink });
    const action = this.config.action === 'response' ? stripSpecialTokens(responseText) : (parsed.answer ?? '');
    const answer = await this.session.request({ type: 'step', data: { [this.config.actionField]: action } });
    const { reward } = answer;
    if (typeof reward !== 'number' || !Number.isFinite(reward)) {
      throw new Error(`${this.url}: reward ${typeof reward === 'number' ? reward : show(reward)} is not a finite number`);
    }
    const observation = this.textOf(answer);
    const info = this.infoOf(answer, reward, this.config.action === 'response' || parsed.answer !== undefined);
    this.steps++;
    this.last = observation;
    this.plan = this.planOf(answer);
    const capped = !answer.done && this.config.maxSteps !== null && this.steps >= this.config.maxSteps;
    if (capped) info.truncated = true;
    this.terminated = answer.done || capped;
    if (this.terminated) this.close();
    return { observation, reward, terminated: this.terminated, info };
  }

  render(): string {
    return this.last;
  }

  close(): void {
    this.session?.close();
    this.session = null;
  }

  private textOf(answer: ObservationAnswer): string {
    const text = answer.observation[this.config.observationField];
    if (typeof text === 'string') return text;
    const keys = Object.keys(answer.observation).join(', ') || 'none';
    throw new Error(
      `${this.url}: observation field "${this.config.observationField}" is ${show(text)}, not a string (its fields: ${keys}; env_config.observation_field names it)`,
    );
  }

  /** The plan in the answer (a list of action strings, or null/absent: none from here); null without plan_field. */
  private planOf(answer: ObservationAnswer): string[] | null {
    const field = this.config.planField;
    if (field === null) return null;
    const plan = answer.observation[field] ?? null;
    if (plan === null || (Array.isArray(plan) && plan.every((a) => typeof a === 'string'))) return plan;
    throw new Error(`${this.url}: plan field "${field}" is ${show(plan)}, not a list of action strings or null`);
  }

  /**
   * The step info: the numbers and booleans of the observation's info field; success, action_is_valid and
   * action_is_effective from it when present, else done && reward > 0, whether the reply parsed, and true.
   */
  private infoOf(answer: ObservationAnswer, reward: number, parsed: boolean): EnvInfo {
    const raw = answer.observation[this.config.infoField] ?? {};
    if (typeof raw !== 'object' || Array.isArray(raw)) {
      throw new Error(`${this.url}: info field "${this.config.infoField}" is ${show(raw)}, not a mapping`);
    }
    const kept: Record<string, number | boolean> = {};
    for (const [key, v] of Object.entries(raw as Record<string, unknown>)) {
      if (typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) kept[key] = v;
    }
    return {
      ...kept,
      success: flag(kept.success) ?? (answer.done && reward > 0),
      action_is_valid: flag(kept.action_is_valid) ?? parsed,
      action_is_effective: flag(kept.action_is_effective) ?? true,
    };
  }
}
