/**
 * A `pretrain: DIR` policy's chat format travels with its checkpoints through a real S3 server: the
 * folder's tokenizer_config.json and generation_config.json are stored byte for byte, listed in the
 * manifest with their sha256, and the tokenizer a worker rebuilds from the checkpoint renders the same
 * prompts and stops at the same ids; export reads the same template back.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { tokenizerFromFiles } from '../../src/model/hf/tokenizer';
import { modelFromFolder } from '../../src/model/hf/weights';
import { readCheckpoint } from '../../src/storage/checkpoint';
import { ObjectStore, sha256Hex } from '../../src/storage/object_store';
import { disposeCheckpoint, loadCheckpoint, saveCheckpoint } from '../../src/storage/policy_checkpoint';
import { materializeHfVariant, removeHfFolder } from '../helpers/hf_models';
import { startTestServers, type TestServers } from '../helpers/servers';

let servers: TestServers;
let store: ObjectStore;
let dir = '';

before(async () => {
  servers = await startTestServers();
  store = new ObjectStore(servers.endpoints.s3);
  await store.ensureBucket();
  dir = materializeHfVariant('tied_gqa');
});
after(async () => {
  removeHfFolder(dir);
  await servers?.stop();
});

test('checkpoints of an HF folder carry its tokenizer_config.json and generation_config.json, and render its prompts', async () => {
  const { model, tokenizer } = modelFromFolder(dir);
  const prefix = `runs/chat-${process.pid}/checkpoints/step-0/`;
  const ref = await saveCheckpoint(store, prefix, {
    model,
    tokenizer,
    optimizer: null,
    state: { step: 0, betas: [0.9, 0.999], weightDecay: 0, metrics: {} },
  });
  model.dispose();

  const { manifest, files } = await readCheckpoint(store, ref);
  for (const name of ['tokenizer_config.json', 'generation_config.json']) {
    const source = readFileSync(join(dir, name));
    const entry = manifest.objects.find((o) => o.name === name);
    assert.equal(entry?.sha256, sha256Hex(source), `${name} listed with the folder's sha256`);
    assert.deepEqual(Buffer.from(files[name] as Uint8Array), source);
  }
  assert.equal(tokenizerFromFiles(files).chat.source, tokenizer.chat.source);

  const loaded = await loadCheckpoint(store, ref);
  try {
    const chat = [{ role: 'user' as const, content: 'FrozenLake. Reach G.\nTurn 1:\nP_G\n' }];
    assert.equal(loaded.tokenizer.chat.render(chat, true), tokenizer.chat.render(chat, true));
    assert.ok(loaded.tokenizer.chat.render(chat, true).startsWith('<|im_start|>system\nYou are Qwen, created by Alibaba Cloud.'));
    assert.deepEqual(loaded.tokenizer.eosIds, JSON.parse(readFileSync(join(dir, 'generation_config.json'), 'utf8')).eos_token_id);
  } finally {
    disposeCheckpoint(loaded);
  }
});
