/**
 * A server that speaks OpenEnv's WebSocket protocol (openenv-core 0.3.0: `/ws` sessions, `GET /health`) for
 * tests of the `openenv` env type, written with `ws`: the OpenEnv server is outside starpo, so the tests
 * bring their own, and this one can misbehave on purpose. Its game: reset(seed) asks for one of the four
 * FrozenLake words (seed mod 4); a step that says it scores 1 and ends the episode, any other scores 0; an
 * episode ends after 3 steps. Each observation also holds `plan`, the word while one is asked for (null
 * after the episode). On the episodes reset with one of `fault.seeds` it goes wrong at `fault.at`
 * in the way `fault.kind` names.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

/** The ways a server goes wrong that the openenv env must turn into an episode failure. */
export type Fault =
  | 'silent' // never answers
  | 'close' // closes the socket instead of answering
  | 'malformed' // answers text that is not JSON
  | 'shape' // answers JSON that is not an observation
  | 'error' // answers OpenEnv's error message
  | 'oversized' // answers an observation of 100 kB
  | 'reward_infinite'; // answers reward 1e999 (JSON.parse reads Infinity)

export interface FaultSpec {
  kind: Fault;
  /** 'reset', or the 1-based step of the episode. */
  at: 'reset' | number;
  seeds: readonly number[];
}

export interface TestOpenEnvServer {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Sessions open now. */
  open(): number;
  /** The most episodes in play at once (from a reset to the answer that ends it, or its session's end). */
  maxPlaying(): number;
  /** Sessions open once every session the client ended has closed here too (waits at most 5 s for it). */
  settled(): Promise<number>;
  /** `{"type": "close"}` messages received. */
  closeMessages(): number;
  /** The reset data received, in order. */
  resets: Record<string, unknown>[];
  stop(): Promise<void>;
}

export const WORDS = ['Left', 'Down', 'Right', 'Up'];

function observation(
  text: string,
  reward: number | null,
  done: boolean,
  info: Record<string, unknown> = {},
  plan: string[] | null = null,
): string {
  return JSON.stringify({ type: 'observation', data: { observation: { text, info, plan }, reward, done } });
}

/** The answer text of a fault, or null for 'silent' and 'close' (no answer). */
function faultAnswer(kind: Fault): string | null {
  switch (kind) {
    case 'malformed':
      return '{"type": "observation", "data": ';
    case 'shape':
      return JSON.stringify({ type: 'observation', data: { obs: { text: 'x' } } });
    case 'error':
      return JSON.stringify({ type: 'error', data: { message: 'env exploded', code: 'EXECUTION_ERROR' } });
    case 'oversized':
      return observation('x'.repeat(100_000), 0, false);
    case 'reward_infinite':
      return '{"type": "observation", "data": {"observation": {"text": "x"}, "reward": 1e999, "done": false}}';
    default:
      return null;
  }
}

/** Starts the server on a loopback port (default: a free one). */
export async function startOpenEnvServer(fault?: FaultSpec, port = 0): Promise<TestOpenEnvServer> {
  const http = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"healthy"}');
    } else res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server: http, path: '/ws' });
  const sockets = new Set<WebSocket>();
  let closes = 0;
  const resets: Record<string, unknown>[] = [];
  let playing = 0;
  let maxPlaying = 0;
  wss.on('connection', (ws) => {
    sockets.add(ws);
    let inPlay = false;
    const play = (on: boolean) => {
      if (on === inPlay) return;
      inPlay = on;
      playing += on ? 1 : -1;
      maxPlaying = Math.max(maxPlaying, playing);
    };
    ws.on('close', () => play(false));
    ws.on('close', () => sockets.delete(ws));
    let target = '';
    let steps = 0;
    let faulty = false;
    const misbehave = (): boolean => {
      if (!faulty || fault === undefined) return false;
      if (fault.kind === 'close') ws.close(1011, 'injected');
      const answer = faultAnswer(fault.kind);
      if (answer !== null) ws.send(answer);
      return true;
    };
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString()) as { type: string; data?: Record<string, unknown> };
      if (msg.type === 'close') {
        closes++;
        play(false);
        ws.close();
      } else if (msg.type === 'reset') {
        const seed = Number(msg.data?.seed);
        resets.push(msg.data ?? {});
        play(true);
        faulty = fault?.seeds.includes(seed) === true;
        target = WORDS[seed % 4];
        steps = 0;
        if (fault?.at === 'reset' && misbehave()) return;
        ws.send(observation(`Say ${target}.`, null, false, {}, [target]));
      } else if (msg.type === 'step') {
        steps++;
        if (fault?.at === steps && misbehave()) return;
        const said = String(msg.data?.message ?? '');
        const hit = said === target;
        const done = hit || steps >= 3;
        if (done) play(false);
        const text = hit ? 'Right.' : `Not ${said}. Say ${target}.`;
        ws.send(observation(text, hit ? 1 : 0, done, { success: hit, moves: steps }, done ? null : [target]));
      }
    });
  });
  await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    open: () => sockets.size,
    maxPlaying: () => maxPlaying,
    settled: async () => {
      for (let i = 0; i < 500 && sockets.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
      return sockets.size;
    },
    closeMessages: () => closes,
    resets,
    stop: async () => {
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** A loopback URL where nothing listens (a port just freed). */
export async function deadUrl(): Promise<string> {
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  await new Promise<void>((resolve) => http.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
