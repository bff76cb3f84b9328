/**
 * env_config of the `openenv` env type (docs/envs.md "OpenEnv servers"): which server(s), how a reply
 * becomes the action, where the observation's text and info are, and the bounds of every exchange.
 */
import { show } from '../../config/show';
import { EnvConfigError } from '../../contract';
import { checkKeys, checkRegex, getInstruction, getInt, getNumber, getString, type RawEnvConfig } from '../config';

const WHERE = 'env_config of openenv';

/** Allowed env_config keys of openenv. */
export const OPENENV_KEYS = [
  'url',
  'action',
  'action_field',
  'observation_field',
  'info_field',
  'plan_field',
  'reset',
  'max_steps',
  'connect_timeout_seconds',
  'answer_timeout_seconds',
  'max_message_bytes',
  'env_instruction',
  'action_pattern',
  'command',
  'startup_timeout_seconds',
] as const;

/** How the model's reply becomes the action: the text between the answer tags, or the reply as it is. */
export type ActionMode = 'answer' | 'response';

/** A validated openenv env_config; docs/envs.md lists the keys and defaults. */
export interface OpenEnvConfig {
  /** The servers (http(s) or ws(s) base URLs, no trailing slash); env id n plays on urls[n mod length]. */
  urls: string[];
  action: ActionMode;
  actionField: string;
  observationField: string;
  infoField: string;
  /** The observation's field holding the server's shortest plan from the state (action strings) for `warmup: solver`; null = none. */
  planField: string | null;
  /** Merged into the reset message's data beside `seed`. */
  reset: Record<string, unknown>;
  /** An env-side step cap (ROLL's env_config max_steps): the episode ends truncated after it; null = none. */
  maxSteps: number | null;
  connectTimeoutSeconds: number;
  answerTimeoutSeconds: number;
  maxMessageBytes: number;
  /** "" = none. */
  envInstruction: string;
  /** A shell command that serves the env at the (single) url, started by the process that plays it; null = none. */
  command: string | null;
  /** The longest wait for the command's server to answer /health. */
  startupTimeoutSeconds: number;
}

const URL_WHAT = 'an http://, https://, ws:// or wss:// URL of an OpenEnv server (or a non-empty list of them)';

/** One server URL: checked, its trailing slashes dropped. */
function serverUrl(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  try {
    const u = new URL(v);
    if (!['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol) || u.search !== '' || u.hash !== '') return null;
  } catch {
    return null;
  }
  return v.replace(/\/+$/, '');
}

function urlsOf(raw: Record<string, unknown>): string[] {
  const v = raw.url;
  if (v === undefined) throw new EnvConfigError('url', `${WHERE}: url is required (${URL_WHAT})`);
  const list = Array.isArray(v) ? v : [v];
  const urls = list.map(serverUrl);
  if (list.length === 0 || urls.some((u) => u === null)) {
    throw new EnvConfigError('url', `${WHERE}: url must be ${URL_WHAT}, got ${show(v)}`);
  }
  return urls as string[];
}

function resetDataOf(raw: Record<string, unknown>): Record<string, unknown> {
  const v = raw.reset;
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v) || Object.hasOwn(v, 'seed')) {
    throw new EnvConfigError(
      'reset',
      `${WHERE}: reset must be a mapping of extra reset data without "seed" (the group's seed is sent as seed), got ${show(v)}`,
    );
  }
  return v as Record<string, unknown>;
}

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FIELD_WHAT = 'a field name (letters, digits, _)';

/** Validates a raw env_config. Throws EnvConfigError naming the key, the value and what is allowed. */
export function parseOpenEnvConfig(raw: RawEnvConfig): OpenEnvConfig {
  const r = checkKeys(WHERE, raw, OPENENV_KEYS);
  checkRegex(WHERE, r, 'action_pattern');
  const urls = urlsOf(r);
  const command = r.command === undefined || r.command === null ? null : getString(WHERE, r, 'command', '');
  if (command !== null && urls.length > 1) {
    throw new EnvConfigError(
      undefined,
      `${WHERE}: command serves one server, but url names ${urls.length} (${show(r.url)}); give the one URL it listens on`,
    );
  }
  return {
    urls,
    action: getString(WHERE, r, 'action', 'answer', /^(answer|response)$/, '"answer" or "response"') as ActionMode,
    actionField: getString(WHERE, r, 'action_field', 'message', FIELD, FIELD_WHAT),
    observationField: getString(WHERE, r, 'observation_field', 'text', FIELD, FIELD_WHAT),
    infoField: getString(WHERE, r, 'info_field', 'info', FIELD, FIELD_WHAT),
    planField: r.plan_field === undefined || r.plan_field === null ? null : getString(WHERE, r, 'plan_field', '', FIELD, FIELD_WHAT),
    reset: resetDataOf(r),
    maxSteps: r.max_steps === undefined || r.max_steps === null ? null : getInt(WHERE, r, 'max_steps', 1, 1, 1_000_000),
    connectTimeoutSeconds: getNumber(WHERE, r, 'connect_timeout_seconds', 10, 0, 600, true),
    answerTimeoutSeconds: getNumber(WHERE, r, 'answer_timeout_seconds', 30, 0, 3600, true),
    maxMessageBytes: getInt(WHERE, r, 'max_message_bytes', 1 << 20, 1024, 1 << 26),
    envInstruction: getInstruction(WHERE, r) ?? '',
    command,
    startupTimeoutSeconds: getNumber(WHERE, r, 'startup_timeout_seconds', 120, 0, 3600, true),
  };
}
