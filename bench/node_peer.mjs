// The peer: read served memory rows with Node's WebCrypto, the same work read_memory_rows does.
//
// For each row: parse the headerless envelope in `wrapped_key` ([2-byte BE key length]
// [RSA-OAEP-SHA256 wrapped key][12-byte IV][AES-256-GCM ciphertext][16-byte tag]), RSA-OAEP
// unwrap the content key, AES-GCM open the raw 32-byte memory key, check `kid` (first 8 bytes of
// SHA-256(key), lowercase hex), open the VAULT `ciphertext` ([0x01][0x01][12-byte nonce][ct][tag]),
// decode the UTF-8 JSON and check `v == 2` and `row_id == id`. Written from the spec, no
// dependencies. WebCrypto runs each operation as a job on libuv's thread pool, so many rows are
// kept in flight at once; the caller sets UV_THREADPOOL_SIZE to the number of cores.
//
// Usage: node node_peer.mjs INPUT.json   where INPUT is {pkcs8_b64, rows: [{id, kid, ciphertext,
// wrapped_key}], repeats, in_flight}. Prints one JSON line: {rows, memories, graph, unreadable,
// seconds: [each repeat], best_seconds}.
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';

const subtle = webcrypto.subtle;
const decoder = new TextDecoder('utf-8', { fatal: true });

function b64(text) {
  return new Uint8Array(Buffer.from(text, 'base64'));
}

function hex(bytes) {
  return Buffer.from(bytes).toString('hex');
}

async function gcmOpen(rawKey, iv, sealed) {
  const key = await subtle.importKey('raw', rawKey, { name: 'AES-GCM' }, false, ['decrypt']);
  return new Uint8Array(await subtle.decrypt({ name: 'AES-GCM', iv }, key, sealed));
}

async function readRow(row, privateKey) {
  const env = b64(row.wrapped_key);
  if (env.length < 2) throw new Error('envelope too short');
  const n = (env[0] << 8) | env[1];
  if (2 + n + 12 + 16 > env.length) throw new Error('key length overruns the envelope');
  const wrapped = env.subarray(2, 2 + n);
  const iv = env.subarray(2 + n, 2 + n + 12);
  const sealed = env.subarray(2 + n + 12);
  const contentKey = new Uint8Array(await subtle.decrypt({ name: 'RSA-OAEP' }, privateKey, wrapped));
  const memoryKey = await gcmOpen(contentKey, iv, sealed);
  if (memoryKey.length !== 32) throw new Error('not a 32-byte key');
  const digest = new Uint8Array(await subtle.digest('SHA-256', memoryKey));
  if (hex(digest.subarray(0, 8)) !== row.kid) throw new Error('kid mismatch');
  const blob = b64(row.ciphertext);
  if (blob.length < 30 || blob[0] !== 1 || blob[1] !== 1) throw new Error('not a VAULT blob');
  const plain = await gcmOpen(memoryKey, blob.subarray(2, 14), blob.subarray(14));
  const obj = JSON.parse(decoder.decode(plain));
  if (obj.v !== 2 || obj.row_id !== row.id) throw new Error('not bound to this row');
  if (obj.observation) return 'memory';
  return 'graph';
}

async function readAll(rows, privateKey, inFlight) {
  const counts = { memories: 0, graph: 0, unreadable: 0 };
  let next = 0;
  async function lane() {
    while (next < rows.length) {
      const row = rows[next++];
      try {
        const kind = await readRow(row, privateKey);
        if (kind === 'memory') counts.memories++; else counts.graph++;
      } catch {
        counts.unreadable++;
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, rows.length) }, lane));
  return counts;
}

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const privateKey = await subtle.importKey('pkcs8', b64(input.pkcs8_b64),
  { name: 'RSA-OAEP', hash: 'SHA-256' }, false, ['decrypt']);
const seconds = [];
let counts = null;
for (let i = 0; i < (input.repeats || 1); i++) {
  const t0 = process.hrtime.bigint();
  counts = await readAll(input.rows, privateKey, input.in_flight || 64);
  seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
console.log(JSON.stringify({ rows: input.rows.length, ...counts, seconds, best_seconds: Math.min(...seconds) }));
