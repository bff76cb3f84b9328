/**
 * TCP port selection on 127.0.0.1 (DESIGN.md: "free ports are picked for tests so two runs never collide").
 */
import * as net from 'node:net';

/** true when 127.0.0.1:port can be bound right now. `port` is a TCP port (1-65535). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** A port the OS reports free on 127.0.0.1, not in `taken` (which it is added to). */
export async function freePort(taken: Set<number> = new Set()): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.once('error', reject);
      srv.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => {
        const addr = srv.address();
        const p = typeof addr === 'object' && addr ? addr.port : 0;
        srv.close(() => resolve(p));
      });
    });
    // SeaweedFS derives nothing from these, but keep clear of ports whose +10000 overflows.
    if (port > 0 && port < 55000 && !taken.has(port)) {
      taken.add(port);
      return port;
    }
  }
  throw new Error('could not find a free TCP port on 127.0.0.1 after 50 attempts');
}

/**
 * `explicit` when given (must be free, else throws naming it), else `preferred` when free, else a free port
 * not in `taken`. Explicit ports are expected to be in `taken` already (so no other pick lands on them).
 * @throws Error when an explicitly requested port is in use.
 */
export async function pickPort(what: string, explicit: number | undefined, preferred: number | undefined, taken: Set<number>): Promise<number> {
  if (explicit !== undefined) {
    if (!Number.isInteger(explicit) || explicit < 1 || explicit > 65535) {
      throw new Error(`${what} port ${explicit} is invalid; allowed: an integer 1-65535`);
    }
    if (!(await isPortFree(explicit))) {
      throw new Error(`${what} port ${explicit} is in use on 127.0.0.1; pass another port or stop what listens there`);
    }
    taken.add(explicit);
    return explicit;
  }
  if (preferred !== undefined && !taken.has(preferred) && (await isPortFree(preferred))) {
    taken.add(preferred);
    return preferred;
  }
  return freePort(taken);
}

/** true when a TCP connection to host:port succeeds within `timeoutMs` milliseconds. */
export function canConnect(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}
