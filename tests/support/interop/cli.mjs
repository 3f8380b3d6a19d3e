#!/usr/bin/env node
// One JSON command on stdin → one JSON answer on stdout. Bytes cross as standard base64,
// private keys as PKCS#8 (or PKCS#1) PEM, public keys as base64 SPKI DER.
//   {"op": "generateKey"}                                → {"privateKeyPem", "publicKeyBase64"}
//   {"op": "batch", "commands": [ … ]}                  → {"results": [ … ]} (one Node start for many)
// Every answer carries "ok"; a refusal is {"ok": false, "error": {name, message, field?, offset?, step?}}.
import { b64decode, b64encode, utf8 } from './b64.mjs';
import { describeError } from './errors.mjs';
import { generateKeyPair, kid, publicKeyFingerprint } from './keys.mjs';
import { parseAny } from './layouts.mjs';
import { sealVault, openVault } from './vault.mjs';
import { sealEnvelope, openEnvelope, wrapToAgent, unwrapAsAgent, wrapToOwner, unwrapAsOwner } from './envelope.mjs';
import { newMemoryRow, newTopicRows, readMemoryRow, openRowAsOwner, sealSpaceRow, openSpaceRow } from './memory.mjs';

const bytes = (s, field) => b64decode(s, field);

export const OPS = {
  generateKey: async (c) => generateKeyPair(c.bits ?? 2048),
  kid: async (c) => ({ kid: await kid(bytes(c.key, 'key')) }),
  publicKeyFingerprint: async (c) => ({ fingerprint: await publicKeyFingerprint(c.publicKey) }),
  parse: async (c) => {
    const p = parseAny(bytes(c.data, 'data'), c.kind ?? null);
    return { kind: p.kind, fields: p.fields.map((f) => ({ name: f.name, offset: f.offset, length: f.length, hex: Buffer.from(f.value).toString('hex') })) };
  },
  sealVault: async (c) => ({ blob: b64encode(await sealVault(bytes(c.key, 'key'), bytes(c.plaintext, 'plaintext'),
    ...(c.nonce ? [bytes(c.nonce, 'nonce')] : []))) }),
  openVault: async (c) => ({ plaintext: b64encode(await openVault(bytes(c.key, 'key'), bytes(c.blob, 'ciphertext'))) }),
  sealEnvelope: async (c) => ({ envelope: b64encode(await sealEnvelope(bytes(c.payload, 'payload'), c.publicKey, { owner: !!c.owner })) }),
  openEnvelope: async (c) => ({ payload: b64encode(await openEnvelope(bytes(c.envelope, 'envelope'), c.privateKeyPem, { owner: !!c.owner })) }),
  wrapToAgent: async (c) => ({ envelope: b64encode(await wrapToAgent(bytes(c.key, 'key'), c.publicKey)) }),
  unwrapAsAgent: async (c) => ({ key: b64encode(await unwrapAsAgent(bytes(c.envelope, 'wrapped_key'), c.privateKeyPem)) }),
  wrapToOwner: async (c) => ({ envelope: b64encode(await wrapToOwner(bytes(c.key, 'key'), c.publicKey)) }),
  unwrapAsOwner: async (c) => ({ key: b64encode(await unwrapAsOwner(bytes(c.envelope, 'owner_wrap'), c.privateKeyPem)) }),
  newMemoryRow: async (c) => ({ row: await newMemoryRow(c, c.keys) }),
  newTopicRows: async (c) => newTopicRows(c, c.keys),
  readMemoryRow: async (c) => ({ memory: await readMemoryRow(c.row, c.privateKeyPem) }),
  openRowAsOwner: async (c) => ({ plaintext: await openRowAsOwner(c.row, c.privateKeyPem) }),
  sealSpaceRow: async (c) => ({ ciphertext: b64encode(await sealSpaceRow(bytes(c.key, 'key'), c.plaintext, c)) }),
  openSpaceRow: async (c) => ({ plaintext: await openSpaceRow(bytes(c.blob, 'ciphertext'), bytes(c.key, 'key'), c) }),
  utf8: async (c) => ({ base64: b64encode(utf8.encode(c.text)) }),
};

export async function run(command) {
  try {
    if (command?.op === 'batch') {
      const results = [];
      for (const c of command.commands || []) results.push(await run(c));
      return { ok: true, results };
    }
    const op = OPS[command?.op];
    if (!op) return { ok: false, error: { name: 'UsageError', message: `unknown op ${JSON.stringify(command?.op)}` } };
    return { ok: true, ...(await op(command)) };
  } catch (err) {
    return { ok: false, error: describeError(err) };
  }
}

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  let command;
  try {
    command = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    process.stdout.write(JSON.stringify({ ok: false, error: { name: 'UsageError', message: `stdin is not JSON: ${err.message}` } }));
    process.exitCode = 2;
    return;
  }
  process.stdout.write(JSON.stringify(await run(command)));
}

await main();
