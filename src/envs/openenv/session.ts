/**
 * One WebSocket session with an OpenEnv server (openenv-core's `/ws` endpoint): one request at a time, each
 * answered by one message, every wait bounded. A refused connection is tried again until connect_timeout_seconds
 * pass, so a server being restarted (after a crash or a kill) costs its episodes nothing when it is back in time.
 * The first thing that goes wrong after that (no connection, no answer in
 * time, the socket closing, an answer that is not JSON, not an observation or over the size limit, an error
 * answer) breaks the session: the pending request and every later one reject with the server's URL and the
 * reason, and the socket is dropped.
 */
import WebSocket from 'ws';
import { show } from '../../config/show';

/** Bounds of a session (env_config keys connect_timeout_seconds, answer_timeout_seconds, max_message_bytes). */
export interface SessionLimits {
  connectTimeoutSeconds: number;
  answerTimeoutSeconds: number;
  maxMessageBytes: number;
}

/** What an observation answer carries (`data` of `{"type": "observation"}`); reward is checked by the env. */
export interface ObservationAnswer {
  observation: Record<string, unknown>;
  reward: unknown;
  done: boolean;
}

interface Pending {
  resolve: (answer: ObservationAnswer | null) => void;
  reject: (err: Error) => void;
}

/** Network codes of a server that is not there, in the words a log reader expects. */
const CONNECT_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ECONNRESET: 'connection reset',
};

/** The pause before connecting again to a server that refused. */
const RETRY_MS = 250;
/** How long a closed session waits for the server to close its socket before closing it from here. */
const CLOSE_GRACE_MS = 1000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class OpenEnvSession {
  private ws!: WebSocket;
  private readonly opened: Promise<unknown>;
  private pending: Pending | null = null;
  /** Why the session cannot be used any more; null while it can. */
  private broken: string | null = null;

  /** Connects to `url` (the server's /ws endpoint) at once; requests wait for the connection. */
  constructor(
    readonly url: string,
    private readonly limits: SessionLimits,
  ) {
    const ms = limits.connectTimeoutSeconds * 1000;
    this.opened = this.wait(ms, `no connection within ${limits.connectTimeoutSeconds} s`);
    this.opened.catch(() => {}); // a session closed before any request is not an error of anyone's
    this.connect(Date.now() + ms);
  }

  /** Opens a socket; a refusal while `deadline` is more than a pause away opens another after the pause. */
  private connect(deadline: number): void {
    const ws = new WebSocket(this.url, {
      handshakeTimeout: this.limits.connectTimeoutSeconds * 1000,
      maxPayload: this.limits.maxMessageBytes,
      perMessageDeflate: false,
    });
    this.ws = ws;
    let retrying = false;
    const stale = () => ws !== this.ws || this.broken !== null;
    ws.on('open', () => stale() || this.settle(null));
    ws.on('message', (data, isBinary) => stale() || this.answer(data, isBinary));
    ws.on('error', (err: Error & { code?: string }) => {
      if (stale()) return;
      if (err.code === 'ECONNREFUSED' && Date.now() + RETRY_MS < deadline) {
        retrying = true;
        setTimeout(() => stale() || this.connect(deadline), RETRY_MS).unref();
      } else this.fail(this.reasonOf(err));
    });
    ws.on('close', (code, reason) => {
      if (!stale() && !retrying) this.fail(`socket closed by the server (code ${code}${reason.length > 0 ? `: ${reason}` : ''})`);
    });
  }

  /**
   * Sends one message and waits for its observation answer.
   * @throws Error (rejects) naming the URL and what went wrong; the session is broken afterwards
   */
  async request(message: Record<string, unknown>): Promise<ObservationAnswer> {
    await this.opened;
    if (this.broken !== null) throw new Error(`${this.url}: ${this.broken}`);
    const answer = this.wait(this.limits.answerTimeoutSeconds * 1000, `no answer within ${this.limits.answerTimeoutSeconds} s`);
    this.ws.send(JSON.stringify(message));
    return (await answer) as ObservationAnswer;
  }

  /**
   * Ends the session: tells the server (`{"type": "close"}`) when it can and leaves the closing to it, as
   * openenv-core's server closes the socket itself on that message (and logs a traceback when the client
   * closed first). A server that does not is closed from here after a grace, then dropped. Idempotent.
   */
  close(): void {
    if (this.broken !== null) return;
    this.fail('session closed');
    const ws = this.ws;
    if (ws.readyState !== WebSocket.OPEN) {
      ws.terminate();
      return;
    }
    ws.send(JSON.stringify({ type: 'close' }));
    setTimeout(() => ws.close(1000), CLOSE_GRACE_MS).unref();
    setTimeout(() => ws.terminate(), 2 * CLOSE_GRACE_MS).unref(); // a server that never completes the closing handshake
  }

  /** A promise settled by the next answer (or the connection), or rejected when nothing comes within `ms`. */
  private wait(ms: number, timeoutReason: string): Promise<ObservationAnswer | null> {
    return new Promise((resolve, reject) => {
      if (this.broken !== null) {
        reject(new Error(`${this.url}: ${this.broken}`));
        return;
      }
      const timer = setTimeout(() => this.fail(timeoutReason), ms);
      const done = () => {
        clearTimeout(timer);
        this.pending = null;
      };
      this.pending = {
        resolve: (answer) => {
          done();
          resolve(answer);
        },
        reject: (err) => {
          done();
          reject(err);
        },
      };
    });
  }

  private settle(answer: ObservationAnswer | null): void {
    if (this.pending === null) this.fail('an answer to no request');
    else this.pending.resolve(answer);
  }

  /** Breaks the session (first reason wins): rejects the pending request, drops the socket. */
  private fail(reason: string): void {
    if (this.broken !== null) return;
    this.broken = reason;
    this.pending?.reject(new Error(`${this.url}: ${reason}`));
    if (reason !== 'session closed') this.ws.terminate();
  }

  private reasonOf(err: Error & { code?: string }): string {
    if (err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') return `an answer over max_message_bytes (${this.limits.maxMessageBytes} bytes)`;
    const known = err.code === undefined ? undefined : CONNECT_REASONS[err.code];
    return known ?? err.message;
  }

  private answer(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.broken !== null) return;
    const answer = readAnswer(Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data), isBinary);
    if (typeof answer === 'string') this.fail(answer);
    else this.settle(answer);
  }
}

/** An answer's observation, or why it is not one (not text, not JSON, an error answer, another shape). */
function readAnswer(bytes: Buffer, isBinary: boolean): ObservationAnswer | string {
  if (isBinary) return `a binary answer where JSON text was expected (${bytes.length} bytes)`;
  const text = bytes.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return `malformed JSON in its answer: ${show(text)}`;
  }
  if (isObject(parsed) && parsed.type === 'error') {
    const d = isObject(parsed.data) ? parsed.data : {};
    return `error answer: ${String(d.message ?? '(no message)')}${d.code === undefined ? '' : ` (${String(d.code)})`}`;
  }
  const d = isObject(parsed) && parsed.type === 'observation' && isObject(parsed.data) ? parsed.data : null;
  if (d === null || !isObject(d.observation) || typeof d.done !== 'boolean') {
    return `an answer that is not {"type": "observation", "data": {"observation": {...}, "reward": r, "done": bool}}: ${show(text)}`;
  }
  return { observation: d.observation, reward: d.reward, done: d.done };
}
