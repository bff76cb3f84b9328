/**
 * TCP port selection on 127.0.0.1: free ports are picked for tests so two runs never collide.
 */

import { randomInt } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';

/** true when 127.0.0.1:port can be bound right now. `port` is a TCP port (1-65535). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * The kernel's ephemeral port range [low, high] (Linux /proc/sys/net/ipv4/ip_local_port_range;
 * 32768-60999 when unreadable). Outgoing connections take their local port from it at any moment.
 */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low > 0 && high >= low) return [low, high];
  } catch {
    /* not Linux: use the default */
  }
  return [32768, 60999];
}

/**
 * A port free on 127.0.0.1 right now, not in `taken` (which it is added to), drawn at random BELOW
 * the ephemeral range: an OS-assigned port (listen on 0) lies inside that range, where a server's
 * outgoing connections can take it between our pick and the server's bind (seen here as "port in
 * use" when SeaweedFS started just after Temporal). Falls back to an OS-assigned port.
 * @throws Error when no port can be found
 */
export async function freePort(taken: Set<number> = new Set()): Promise<number> {
  const low = 10000;
  const high = Math.min(ephemeralRange()[0] - 1, 55000); // SeaweedFS keeps clear of ports whose +10000 overflows
  for (let attempt = 0; high > low && attempt < 200; attempt++) {
    const port = randomInt(low, high + 1);
    if (!taken.has(port) && (await isPortFree(port))) {
      taken.add(port);
      return port;
    }
  }
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
    if (port > 0 && port < 55000 && !taken.has(port)) {
      taken.add(port);
      return port;
    }
  }
  throw new Error('could not find a free TCP port on 127.0.0.1 after 250 attempts');
}

/**
 * `explicit` when given (must be free, else throws naming it), else `preferred` when free, else a free port
 * not in `taken`. Explicit ports are expected to be in `taken` already (so no other pick lands on them).
 * @throws Error when an explicitly requested port is in use.
 */
export async function pickPort(
  what: string,
  explicit: number | undefined,
  preferred: number | undefined,
  taken: Set<number>,
): Promise<number> {
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
