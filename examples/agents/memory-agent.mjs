#!/usr/bin/env node
// A small Decoy agent: pairs (OAuth device grant), reads its memories first, then saves a topic
// with its first memory in one POST, as the memory contract's agent-memory.mjs recipes do, and
// reads every row back with its own key. Node 18+, WebCrypto only, no npm dependencies.
//
//   DECOY_BASE_URL=http://127.0.0.1:8765 node memory-agent.mjs [--bug owner-wrap|owner-key-bytes] [--key FILE] [--json]
//
// --bug owner-wrap        seals the second memory's owner_wrap with RSA-OAEP-SHA-1 instead of
//                         SHA-256: the server stores it (it never decrypts), the agent reads the row
//                         back fine through self_wrap, and the owner's app cannot open it.
// --bug owner-key-bytes   puts the raw 32-byte key in owner_wrap instead of its 44-character base64
//                         text: the wrap opens, the owner's app refuses what is inside.
// --key FILE              the agent's RSA private key (PKCS#8 PEM) instead of a new one, e.g. the key an
//                         inspector was given (`agent_key=`) so it opens what this agent reads too.
// --json                  prints one JSON line at the end: {token_id, topic_id, rows: [{id, kind, bug}]}.
import { createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';

const subtle = webcrypto.subtle;
const BASE = (process.env.DECOY_BASE_URL || '').replace(/\/+$/, '');
const args = process.argv.slice(2);
const BUG = args.includes('--bug') ? args[args.indexOf('--bug') + 1] : null;
const JSON_OUT = args.includes('--json');
const KEY_FILE = args.includes('--key') ? args[args.indexOf('--key') + 1] : null;
const BUGS = ['owner-wrap', 'owner-key-bytes'];
const say = (...words) => { if (!JSON_OUT) console.log(...words); else console.error(...words); };

const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const unb64 = (text) => new Uint8Array(Buffer.from(text, 'base64'));
const utf8 = new TextEncoder();
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const random = (n) => webcrypto.getRandomValues(new Uint8Array(n));
const sleep = (s) => new Promise((done) => setTimeout(done, s * 1000));

// -- HTTP ------------------------------------------------------------------------------------
let token = null;
async function call(method, path, body, { form = false } = {}) {
  const headers = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  let data;
  if (body !== undefined) {
    headers['content-type'] = form ? 'application/x-www-form-urlencoded' : 'application/json';
    data = form ? new URLSearchParams(body).toString() : JSON.stringify(body);
  }
  const res = await fetch(BASE + path, { method, headers, body: data, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  const answer = text ? JSON.parse(text) : {};
  if (!res.ok) {
    const err = new Error(`${method} ${path} → ${res.status} ${answer.code || answer.error || ''}: ${answer.error_description || answer.message || text}`);
    err.status = res.status;
    err.answer = answer;
    throw err;
  }
  return answer;
}
const get = (path) => call('GET', path);
const post = (path, body) => call('POST', path, body);

// -- keys and blobs (the memory contract's "Exact formats") ------------------------------------
const OAEP256 = { name: 'RSA-OAEP', hash: 'SHA-256' };
async function keyPairFrom(file) {
  const priv = createPrivateKey(readFileSync(file, 'utf8'));
  if (priv.asymmetricKeyType !== 'rsa') throw new Error(`${file}: not an RSA private key`);
  const der = priv.export({ type: 'pkcs8', format: 'der' });
  return {
    privateKey: await subtle.importKey('pkcs8', der, OAEP256, false, ['decrypt']),
    publicKeyBase64: b64(createPublicKey(priv).export({ type: 'spki', format: 'der' })),
  };
}
async function newKeyPair() {
  const pair = await subtle.generateKey({ ...OAEP256, modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) },
    true, ['encrypt', 'decrypt']);
  return { privateKey: pair.privateKey, publicKeyBase64: b64(await subtle.exportKey('spki', pair.publicKey)) };
}
async function kid(key) {
  return hex(new Uint8Array(await subtle.digest('SHA-256', key)).subarray(0, 8));
}
async function gcm(op, rawKey, iv, data) {
  const key = await subtle.importKey('raw', rawKey, { name: 'AES-GCM' }, false, [op]);
  return new Uint8Array(await subtle[op]({ name: 'AES-GCM', iv }, key, data));
}
// VAULT SealedBlob: [0x01 version][0x01 mode][12-byte nonce][AES-256-GCM ciphertext][16-byte tag]
async function sealVault(key, plaintext) {
  const nonce = random(12);
  return Uint8Array.from([1, 1, ...nonce, ...(await gcm('encrypt', key, nonce, plaintext))]);
}
async function openVault(key, blob) {
  if (blob[0] !== 1 || blob[1] !== 1) throw new Error('not a VAULT blob');
  return gcm('decrypt', key, blob.subarray(2, 14), blob.subarray(14));
}
// Headerless envelope: [2-byte BE key length][RSA-OAEP wrapped AES-256 key][12-byte IV][AES-256-GCM ct][16-byte tag]
async function envelope(payload, publicKeyBase64, hash = 'SHA-256') {
  const pub = await subtle.importKey('spki', unb64(publicKeyBase64), { name: 'RSA-OAEP', hash }, false, ['encrypt']);
  const contentKey = random(32);
  const wrapped = new Uint8Array(await subtle.encrypt({ name: 'RSA-OAEP' }, pub, contentKey));
  const iv = random(12);
  const sealed = await gcm('encrypt', contentKey, iv, payload);
  return Uint8Array.from([wrapped.length >> 8, wrapped.length & 0xff, ...wrapped, ...iv, ...sealed]);
}
async function openEnvelope(env, privateKey) {
  const n = (env[0] << 8) | env[1];
  const contentKey = new Uint8Array(await subtle.decrypt({ name: 'RSA-OAEP' }, privateKey, env.subarray(2, 2 + n)));
  return gcm('decrypt', contentKey, env.subarray(2 + n, 14 + n), env.subarray(14 + n));
}
// owner_wrap: [0x01][0x02] + the envelope to owner_public_key, whose plaintext is the key's base64 TEXT.
async function ownerWrap(key, ownerPublicKey, bug) {
  const text = bug === 'owner-key-bytes' ? key : utf8.encode(b64(key));
  const env = await envelope(text, ownerPublicKey, bug === 'owner-wrap' ? 'SHA-1' : 'SHA-256');
  return Uint8Array.from([1, 2, ...env]);
}

async function sealRow(plaintext, keys, bug = null) {
  const key = random(32);
  return {
    id: plaintext.row_id,
    kid: await kid(key),
    ciphertext: b64(await sealVault(key, utf8.encode(JSON.stringify(plaintext)))),
    owner_wrap: b64(await ownerWrap(key, keys.ownerPublicKey, bug)),
    self_wrap: b64(await envelope(key, keys.agentPublicKey)),
  };
}
async function newTopicRows({ name, type = '', relationType = 'is interested in' }, keys) {
  const entityId = webcrypto.randomUUID();
  const relationId = webcrypto.randomUUID();
  const entity = { v: 2, row_id: entityId, entity: { name, entityType: type }, about: [] };
  const relation = {
    v: 2, row_id: relationId, relation: { from: 'default_user', to: name, relationType },
    endpoints: ['user', `topic:${entityId}`], about: [],
  };
  return { topicId: entityId, rows: [await sealRow(entity, keys), await sealRow(relation, keys)] };
}
async function newMemoryRow({ topic, text, categories = [] }, keys, bug = null) {
  const rowId = webcrypto.randomUUID();
  const plaintext = { v: 2, row_id: rowId, observation: { entityName: topic.name, content: text }, about: [`topic:${topic.id}`] };
  if (categories.length) plaintext.categories = [...new Set(categories)];
  return sealRow(plaintext, keys, bug);
}
// As served: wrapped_key is a headerless envelope to this agent, plaintext the raw key.
async function readRow(row, privateKey) {
  const key = await openEnvelope(unb64(row.wrapped_key), privateKey);
  if ((await kid(key)) !== row.kid) throw new Error(`kid ${row.kid} does not match the key`);
  const obj = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(await openVault(key, unb64(row.ciphertext))));
  if (obj.v !== 2 || obj.row_id !== row.id) throw new Error('not bound to this row');
  return obj;
}

// -- pairing: RFC 8628 device grant ------------------------------------------------------------
async function pair(me) {
  const clientId = 'example-memory-agent';
  const ask = await post('/oauth/device', {
    client_id: clientId, name: 'Example memory agent', platform: 'oauth', agent_public_key: me.publicKeyBase64,
    // memory.save is asked in a row of its own (the sandbox refuses it beside others: ASK_ALONE)
    authorization_details: [{ permissions: ['memory.read'] }, { permissions: ['memory.save'] }],
  });
  say(`pairing: approve at ${ask.verification_uri_complete || ask.verification_uri} (code ${ask.user_code})`);
  let interval = Number(ask.interval || 5);
  const deadline = Date.now() + Number(ask.expires_in || 600) * 1000;
  for (let first = true; Date.now() < deadline; first = false) {
    if (!first) await sleep(interval);
    try {
      return await call('POST', '/oauth/token', {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: ask.device_code, client_id: clientId,
      }, { form: true });
    } catch (err) {
      const code = err.answer?.error;
      if (code === 'slow_down') interval += 5;
      else if (code !== 'authorization_pending') throw err;
    }
  }
  throw new Error('the pairing link expired before the owner approved');
}

async function main() {
  if (!BASE) throw new Error('set DECOY_BASE_URL to the Decoy (or inspector) URL, e.g. http://127.0.0.1:8765');
  if (BUG && !BUGS.includes(BUG)) throw new Error(`--bug takes one of ${BUGS.join(', ')}`);
  const me = KEY_FILE ? await keyPairFrom(KEY_FILE) : await newKeyPair();
  const answer = await pair(me);
  token = answer.access_token;
  say(`paired: token_id ${answer.token_id}`);

  // 1. Read before writing.
  const g = await get('/api/agent/context/memory-grantees');
  if (!g.owner_public_key) throw new Error('owner_public_key is null: the owner has not finished key setup');
  const keys = { ownerPublicKey: g.owner_public_key, agentPublicKey: me.publicKeyBase64 };
  const before = await get('/api/agent/context/memories');
  say(`read first: ${before.memories.length} rows this connection can open`);

  // 2. A topic, its relation and its first memories in one POST.
  const made = await newTopicRows({ name: 'Lisbon trip', type: 'trip', relationType: 'is planning' }, keys);
  const topic = { id: made.topicId, name: 'Lisbon trip' };
  const finding = await newMemoryRow({ topic, categories: ['travel'], text:
    'Lisbon trip: direct morning flights run on Tuesdays and Fridays only (checked 2026-10-05).' }, keys);
  const hotel = await newMemoryRow({ topic, categories: ['travel', 'user_preferences'], text:
    'Lisbon trip: prefers a quiet hotel in Alfama within walking distance of a tram stop.' }, keys, BUG);
  const rows = [...made.rows, finding, hotel];
  const saved = await post('/api/agent/context/memories', { rows });
  say(`saved ${rows.length} rows (topic ${topic.id}): ${JSON.stringify(Object.keys(saved))}`);

  // 3. Read back every row with this agent's own key (self_wrap, served as wrapped_key).
  const after = await get('/api/agent/context/memories');
  const mine = new Map(after.memories.map((m) => [m.id, m]));
  for (const r of rows) {
    const served = mine.get(r.id);
    if (!served) throw new Error(`row ${r.id} is not served back`);
    const obj = await readRow(served, me.privateKey);
    say(`read back ${r.id}: ${obj.observation ? obj.observation.content : obj.entity ? `topic ${obj.entity.name}` : 'relation'}`);
  }
  say(BUG ? `all rows read back with the agent's key — but the owner's app cannot open ${hotel.id} (--bug ${BUG})` : 'all rows read back');
  if (JSON_OUT) {
    const kinds = ['topic', 'relation', 'memory', 'memory'];
    console.log(JSON.stringify({
      token_id: answer.token_id, topic_id: topic.id,
      rows: rows.map((r, i) => ({ id: r.id, kind: kinds[i], bug: r === hotel ? BUG : null })),
    }));
  }
}

main().catch((err) => {
  console.error(`memory-agent: ${err.message}`);
  process.exitCode = 1;
});
