import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { GgufError } from '../../../../src/model/gguf/error';
import { checkDequantizable, readGguf, tensorFloat32 } from '../../../../src/model/gguf/reader';
import { ggmlTypeId } from '../../../../src/model/gguf/types';
import { afterString, FIXTURES, patchedCopy, tensorInfoAt, withTempDir } from './fixtures';

const ALLOWED = 'allowed: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K';

/** Asserts that `body` throws a GgufError whose message is `message` (a string, exactly) or matches it. */
function throwsGguf(body: () => unknown, message: string | RegExp): void {
  assert.throws(body, (err: unknown) => {
    assert.ok(err instanceof GgufError, `a GgufError, got ${err}`);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

test('a truncated file is refused when opened, naming the tensor, its type, the bytes it needs and the file size', () => {
  withTempDir((dir) => {
    const g = readGguf(join(FIXTURES, 'q4_1.gguf'));
    const last = g.tensors.get('output_norm.weight')!;
    const file = patchedCopy('q4_1.gguf', dir, (b) => b.subarray(0, last.start + 100), 'model.gguf');
    throwsGguf(
      () => readGguf(file),
      `${file}: tensor output_norm.weight (Q4_1, 256 elements) needs bytes ${last.start}..${last.start + 160} but the file has ${last.start + 100} bytes (truncated?)`,
    );
  });
});

test('a file cut inside the header names what was being read', () => {
  withTempDir((dir) => {
    const meta = patchedCopy('q8_0.gguf', dir, (b) => b.subarray(0, afterString(b, 'tokenizer.ggml.tokens') + 2));
    throwsGguf(
      () => readGguf(meta),
      /q8_0\.gguf: metadata key tokenizer\.ggml\.tokens needs bytes \d+\.\.\d+ but the file has \d+ bytes \(truncated\?\)$/,
    );
    const info = patchedCopy('q8_0.gguf', dir, (b) => b.subarray(0, afterString(b, 'blk.0.attn_q.weight') + 6));
    throwsGguf(
      () => readGguf(info),
      /q8_0\.gguf: tensor blk\.0\.attn_q\.weight needs bytes \d+\.\.\d+ but the file has \d+ bytes \(truncated\?\)$/,
    );
  });
});

test('an unsupported tensor type opens, but is refused before any weight is read, naming file, tensor and type', () => {
  withTempDir((dir) => {
    // Q2_K and IQ2_XXS blocks are smaller than Q4_K's, so the patched file still holds every tensor.
    for (const [type, id] of [
      ['Q2_K', 10],
      ['IQ2_XXS', 16],
    ] as const) {
      const file = patchedCopy(
        'q4_k.gguf',
        dir,
        (b) => {
          b.writeUInt32LE(ggmlTypeId(type), tensorInfoAt(b, 'blk.0.attn_q.weight').type);
          return b;
        },
        'model.gguf',
      );
      const g = readGguf(file);
      const message = `${file}: tensor blk.0.attn_q.weight has type ${type} (${id}); ${ALLOWED}`;
      throwsGguf(() => checkDequantizable(g), message);
      throwsGguf(() => tensorFloat32(g, 'blk.0.attn_q.weight'), message);
      assert.equal(tensorFloat32(g, 'output_norm.weight').length, 256, 'the other tensors still decode');
    }
  });
});

test('a type id ggml does not define is refused when opened', () => {
  withTempDir((dir) => {
    const file = patchedCopy('q4_0.gguf', dir, (b) => {
      b.writeUInt32LE(99, tensorInfoAt(b, 'blk.0.ffn_up.weight').type);
      return b;
    });
    throwsGguf(() => readGguf(file), `${file}: tensor blk.0.ffn_up.weight has type unknown (99); ${ALLOWED}`);
  });
});

test('bad magic, unsupported and big-endian versions', () => {
  withTempDir((dir) => {
    const zip = join(dir, 'model.gguf');
    writeFileSync(zip, Buffer.from('PK\u0003\u0004 not a gguf', 'latin1'));
    throwsGguf(() => readGguf(zip), `${zip}: not a GGUF file: it starts with bytes [50 4b 03 04], expected "GGUF" (47 47 55 46)`);
    const tiny = join(dir, 'tiny.gguf');
    writeFileSync(tiny, Buffer.from('GG'));
    throwsGguf(() => readGguf(tiny), /tiny\.gguf: not a GGUF file: it starts with bytes \[47 47\]/);
    const v1 = patchedCopy('f16.gguf', dir, (b) => {
      b.writeUInt32LE(1, 4);
      return b;
    });
    throwsGguf(() => readGguf(v1), `${v1}: GGUF version 1 is not supported; allowed: 2, 3`);
    const be = patchedCopy('f16.gguf', dir, (b) => {
      b.writeUInt32BE(3, 4);
      return b;
    });
    throwsGguf(
      () => readGguf(be),
      `${be}: GGUF version 50331648 is not supported (a big-endian file; only little-endian files are read); allowed: 2, 3`,
    );
  });
});

test('an unknown metadata value type names the key and lists the allowed types', () => {
  withTempDir((dir) => {
    const file = patchedCopy('q5_1.gguf', dir, (b) => {
      b.writeUInt32LE(13, afterString(b, 'test.uint16'));
      return b;
    });
    throwsGguf(
      () => readGguf(file),
      /q5_1\.gguf: metadata key test\.uint16 has value type 13 at byte \d+; allowed: 0 \(UINT8\), .*, 12 \(FLOAT64\)$/,
    );
  });
});

test('a string or array length past the end of the file names the key', () => {
  withTempDir((dir) => {
    const str = patchedCopy('q5_k.gguf', dir, (b) => {
      b.writeBigUInt64LE(1n << 40n, afterString(b, 'general.name') + 4);
      return b;
    });
    throwsGguf(
      () => readGguf(str),
      /q5_k\.gguf: metadata key general\.name: a string of 1099511627776 bytes at byte \d+ runs past the end of the file/,
    );
    const arr = patchedCopy('q5_k.gguf', dir, (b) => {
      b.writeBigUInt64LE(1n << 40n, afterString(b, 'tokenizer.ggml.tokens') + 8);
      return b;
    });
    throwsGguf(
      () => readGguf(arr),
      /q5_k\.gguf: metadata key tokenizer\.ggml\.tokens: an array of 1099511627776 STRING at byte \d+ runs past the end of the file/,
    );
    const huge = patchedCopy('q5_k.gguf', dir, (b) => {
      b.writeBigUInt64LE(2n ** 64n - 1n, afterString(b, 'general.name') + 4);
      return b;
    });
    throwsGguf(
      () => readGguf(huge),
      /metadata key general\.name: string length at byte \d+ is 18446744073709551615; allowed: at most 2\^53 - 1/,
    );
  });
});

test('tensor infos: rows that are not whole blocks, a misaligned offset, a duplicate name, a bad alignment', () => {
  withTempDir((dir) => {
    const rows = patchedCopy('q8_0.gguf', dir, (b) => {
      const at = tensorInfoAt(b, 'blk.0.attn_q.weight');
      b.writeBigUInt64LE(16n, at.dims);
      b.writeBigUInt64LE(32n, at.dims + 8);
      return b;
    });
    throwsGguf(
      () => readGguf(rows),
      `${rows}: tensor blk.0.attn_q.weight (Q8_0) has rows of 16 elements (dims [16,32]); allowed: a multiple of the 32-element Q8_0 block`,
    );
    const offset = patchedCopy('q8_0.gguf', dir, (b) => {
      b.writeBigUInt64LE(
        b.readBigUInt64LE(tensorInfoAt(b, 'output_norm.weight').offset) + 32n,
        tensorInfoAt(b, 'output_norm.weight').offset,
      );
      return b;
    });
    throwsGguf(() => readGguf(offset), /q8_0\.gguf: tensor output_norm\.weight offset \d+ is not a multiple of the alignment 64/);
    const twice = patchedCopy('q8_0.gguf', dir, (b) => {
      Buffer.from('blk.0.attn_k.weight').copy(b, afterString(b, 'blk.0.attn_q.weight') - 19);
      return b;
    });
    throwsGguf(() => readGguf(twice), `${twice}: tensor blk.0.attn_k.weight appears twice`);
    const align = patchedCopy('q8_0.gguf', dir, (b) => {
      b.writeUInt32LE(48, afterString(b, 'general.alignment') + 4);
      return b;
    });
    throwsGguf(() => readGguf(align), `${align}: metadata key general.alignment = 48 (UINT32); allowed: a UINT32 power of two`);
  });
});

test('a duplicate metadata key and a dims count over ggml\u2019s four', () => {
  withTempDir((dir) => {
    const dup = patchedCopy('bf16.gguf', dir, (b) => {
      Buffer.from('test.uint8').copy(b, afterString(b, 'test.int16') - 'test.int16'.length);
      return b;
    });
    throwsGguf(() => readGguf(dup), `${dup}: metadata key test.uint8 appears twice`);
    const dims = patchedCopy('bf16.gguf', dir, (b) => {
      b.writeUInt32LE(5, tensorInfoAt(b, 'blk.0.attn_q.weight').nDims);
      return b;
    });
    throwsGguf(() => readGguf(dims), `${dims}: tensor blk.0.attn_q.weight has 5 dims; allowed: 1 to 4`);
  });
});
