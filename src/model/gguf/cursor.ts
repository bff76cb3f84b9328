/**
 * Sequential little-endian reads over the header region of an open file. The header's length is known only
 * once it is parsed (a tokenizer's vocabulary can make it megabytes), so the buffer grows by doubling as
 * reads reach its end, and the tensor data after the header is never read here.
 */
import { readSync } from 'node:fs';
import { GgufError } from './error';

const FIRST_READ = 1 << 16;

/** A read position in one open file, with the bytes up to it buffered. */
export class HeaderCursor {
  /** Absolute offset of the next read. */
  pos = 0;
  /** What is being read, for error messages (`metadata key general.name`). */
  context = 'header';
  private buf: Buffer;
  private view: DataView;
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });

  constructor(
    private readonly fd: number,
    readonly file: string,
    readonly size: number,
  ) {
    this.buf = Buffer.alloc(0);
    this.view = new DataView(this.buf.buffer);
  }

  /** Bytes left after the cursor. */
  remaining(): number {
    return this.size - this.pos;
  }

  /** Makes [pos, pos + n) readable. @throws GgufError when the file ends first */
  private need(n: number): void {
    const end = this.pos + n;
    if (end > this.size) {
      throw new GgufError(`${this.file}: ${this.context} needs bytes ${this.pos}..${end} but the file has ${this.size} bytes (truncated?)`);
    }
    if (end <= this.buf.length) return;
    const length = Math.min(this.size, Math.max(end, this.buf.length * 2, FIRST_READ));
    const next = Buffer.alloc(length);
    this.buf.copy(next);
    for (let at = this.buf.length; at < length; ) {
      const got = readSync(this.fd, next, at, length - at, at);
      if (got === 0)
        throw new GgufError(`${this.file}: the file ended at byte ${at} while reading ${this.context} (it was ${this.size} bytes)`);
      at += got;
    }
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.length);
  }

  bytes(n: number): Buffer {
    this.need(n);
    this.pos += n;
    return this.buf.subarray(this.pos - n, this.pos);
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++];
  }

  i8(): number {
    this.need(1);
    return this.view.getInt8(this.pos++);
  }

  u16(): number {
    this.need(2);
    this.pos += 2;
    return this.view.getUint16(this.pos - 2, true);
  }

  i16(): number {
    this.need(2);
    this.pos += 2;
    return this.view.getInt16(this.pos - 2, true);
  }

  u32(): number {
    this.need(4);
    this.pos += 4;
    return this.view.getUint32(this.pos - 4, true);
  }

  i32(): number {
    this.need(4);
    this.pos += 4;
    return this.view.getInt32(this.pos - 4, true);
  }

  f32(): number {
    this.need(4);
    this.pos += 4;
    return this.view.getFloat32(this.pos - 4, true);
  }

  f64(): number {
    this.need(8);
    this.pos += 8;
    return this.view.getFloat64(this.pos - 8, true);
  }

  u64(): bigint {
    this.need(8);
    this.pos += 8;
    return this.view.getBigUint64(this.pos - 8, true);
  }

  i64(): bigint {
    this.need(8);
    this.pos += 8;
    return this.view.getBigInt64(this.pos - 8, true);
  }

  /** A u64 count or size that must fit in a JS number. @throws GgufError naming `what` otherwise */
  safeU64(what: string): number {
    const at = this.pos;
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER))
      throw new GgufError(`${this.file}: ${this.context}: ${what} at byte ${at} is ${v}; allowed: at most 2^53 - 1`);
    return Number(v);
  }

  /** A GGUF string: u64 byte length, then that many UTF-8 bytes. */
  string(): string {
    const at = this.pos;
    const n = this.safeU64('string length');
    if (n > this.remaining()) {
      throw new GgufError(
        `${this.file}: ${this.context}: a string of ${n} bytes at byte ${at} runs past the end of the file (${this.size} bytes)`,
      );
    }
    const raw = this.bytes(n);
    try {
      return this.decoder.decode(raw);
    } catch {
      throw new GgufError(`${this.file}: ${this.context}: the string at byte ${at} is not valid UTF-8`);
    }
  }
}
