/**
 * TLS in front of the test servers, which speak plaintext only (`temporal server start-dev` has no TLS
 * option): a gRPC proxy for Temporal that terminates TLS (ALPN h2), requires a client certificate of the
 * test CA (mTLS) and an `authorization: Bearer <key>` header on every call (refused with gRPC status 16
 * otherwise), and forwards each HTTP/2 stream (headers, data, trailers) to the dev server; and a TLS pipe
 * for S3 that notes which watched strings pass through it in plaintext.
 */
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { TestCerts } from './certs';

/** A running proxy on 127.0.0.1:`port`. `close` drops every connection; idempotent. */
export interface TlsProxy {
  port: number;
  close(): Promise<void>;
}

/** Calls the Temporal proxy passed on and refused (no or a wrong API key). */
export interface GrpcProxyStats {
  forwarded: number;
  refused: number;
}

/** Listens on a free loopback port. */
async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Forwards one accepted stream to the upstream session and the answer back, trailers included. */
function forward(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, upstream: http2.ClientHttp2Session): void {
  const req = upstream.request({ ...headers, ':scheme': 'http' });
  stream.on('error', () => undefined);
  req.on('error', () => undefined);
  stream.pipe(req);
  let trailers: http2.IncomingHttpHeaders = {};
  req.on('trailers', (t) => {
    trailers = t;
  });
  req.on('response', (answer, flags) => {
    if (stream.closed) return;
    if (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) {
      stream.respond(answer, { endStream: true }); // a trailers-only answer (a gRPC error)
      return;
    }
    stream.respond(answer, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    req.pipe(stream);
  });
  // A cancelled call (a worker's long poll at shutdown) cancels the other side too.
  stream.on('close', () => {
    if (!req.closed) req.close(http2.constants.NGHTTP2_CANCEL);
  });
  req.on('close', () => {
    if (req.rstCode && !stream.closed) stream.close(req.rstCode);
  });
}

/**
 * The Temporal proxy.
 * @param target the dev server's `host:port`
 * @param apiKey the only key accepted
 */
export async function startGrpcTlsProxy(target: string, certs: TestCerts, apiKey: string): Promise<TlsProxy & { stats: GrpcProxyStats }> {
  const stats: GrpcProxyStats = { forwarded: 0, refused: 0 };
  const server = http2.createSecureServer({
    key: readFileSync(certs.serverKey),
    cert: readFileSync(certs.serverCert),
    ca: readFileSync(certs.ca),
    requestCert: true,
    rejectUnauthorized: true,
  });
  const sessions = new Map<http2.ServerHttp2Session, http2.ClientHttp2Session>();
  server.on('session', (session) => {
    const upstream = http2.connect(`http://${target}`);
    upstream.on('error', () => session.destroy());
    session.on('error', () => undefined);
    session.on('close', () => {
      upstream.destroy();
      sessions.delete(session);
    });
    sessions.set(session, upstream);
  });
  server.on('stream', (stream, headers) => {
    const upstream = sessions.get(stream.session as http2.ServerHttp2Session);
    if (headers.authorization !== `Bearer ${apiKey}` || !upstream) {
      stats.refused++;
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'proxy: missing or wrong API key' },
        { endStream: true },
      );
      return;
    }
    stats.forwarded++;
    forward(stream, headers, upstream);
  });
  const port = await listen(server as unknown as net.Server);
  let closed: Promise<void> | undefined;
  return {
    port,
    stats,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const [session, upstream] of sessions) {
          session.destroy();
          upstream.destroy();
        }
      });
      return closed;
    },
  };
}

/**
 * The S3 pipe: TLS with the test server certificate, plaintext to `host:port`.
 * @param watch strings to look for in what clients send (e.g. a session token header); found ones land in `seen`
 */
export async function startTlsPipe(
  host: string,
  port: number,
  certs: TestCerts,
  watch: string[] = [],
): Promise<TlsProxy & { seen: Set<string> }> {
  const seen = new Set<string>();
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ key: readFileSync(certs.serverKey), cert: readFileSync(certs.serverCert) }, (socket) => {
    const upstream = net.connect(port, host);
    for (const s of [socket, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    let tail = '';
    socket.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString('latin1')).slice(-16384);
      for (const w of watch) if (tail.includes(w)) seen.add(w);
    });
    socket.pipe(upstream).pipe(socket);
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  });
  const listening = await listen(server);
  let closed: Promise<void> | undefined;
  return {
    port: listening,
    seen,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closed;
    },
  };
}
