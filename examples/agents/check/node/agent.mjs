#!/usr/bin/env node
// A Decoy memory agent that follows the spec rule by rule, for `decoy-lab check`. Node 18+,
// WebCrypto and global fetch only, no npm dependencies. Its structure follows
// examples/agents/memory-agent.mjs (HTTP, the byte formats, the topic and memory rows, pairing).
//
//   DECOY_BASE_URL=http://127.0.0.1:8765 node agent.mjs [--task save|edit|relabel|read] [--topic NAME] [--bug NAME]
//
//   --task save   (default) pair, read what it holds, find or create the topic, save one memory
//                 about it, read every row back with its own key
//   --task edit   as save, then correct that memory by id (PUT with expected_rev; on
//                 409 REV_CONFLICT re-read, re-apply, retry) and read it back
//   --task relabel as save, then save a reminder (travel, misc), remove its label `misc` (a key
//                 rotation: a new key and kid, both wraps, and grantee_wraps for every connection the
//                 remaining labels still reach, with removed_reasons) and read it back; then add
//                 the label `food` (the same key) and wrap that key to the connections it newly reaches
//   --task read   pair, read what it holds (waiting while rows are `preparing`), print a summary
//   When the pairing's grant names account.create (the check's `accounts` scenario), any task but
//   read then signs up for a service: the account with its Decoy address, the login password,
//   an API key as a secret field, a memory about the account, the address renamed through a queued
//   edit (polled until applied) and the password read back through unlock. When it names
//   account.read (`slow-unlock`), it reads the account a memory it reads is filed under, through unlock.
//   --bug NAME    plants ONE deliberate mistake (BUGS below), so the check can be seen to catch it
//
// DECOY_BASE_URL (required) is the Decoy server, the sandbox, or the inspector in front of either;
// DECOY_CLIENT_ID (optional) names the connection; DECOY_PREPARING_WAIT (optional, 90 s) bounds the
// reading while rows are still `preparing`.
// What it does goes to stderr; one JSON line goes to stdout at the end. Exit 0 on success,
// 1 on a failure (with its reason), 2 on a usage mistake. It never prints a token or a key.
import { webcrypto } from 'node:crypto';

const subtle = webcrypto.subtle;
const BUGS = {
  'no-self-wrap': 'rows are posted with owner_wrap only',
  'wrong-owner-wrap': "owner_wrap seals the raw 32-byte key, not its base64 text: the owner's app cannot open the row",
  'kid-mismatch': 'kid is the fingerprint of another key than the one that sealed the row',
  'new-topic': 'creates its topic again instead of reusing the one of that name it can read',
  'new-rows-on-retry': 'seals new rows (new ids and keys) for each retry after an unknown outcome',
  'ignore-retry-after': 'reads again every 0.2 s while rows are preparing',
  'fast-poll': 'polls /oauth/token every second and ignores slow_down',
  'token-in-url': 'adds ?access_token=… to its GET requests',
  'unpadded-base64': 'sends its ciphertext and owner_wrap without base64 padding: the save is refused (400) and it stops',
  'password-in-text': "saves the trip's login password in the memory's text",
  'text-in-body': "sends each memory's first line beside its ciphertext, in a field of its own (`preview`)",
  'correct-as-new': '(--task edit) posts the corrected text as a new memory beside the one it corrects',
  'one-key': 'seals every row with one key (the same kid for every row)',
  'wrap-too-far': "wraps each row to every listed connection, under a reason of that connection's grant the row does not carry",
  'wrap-one-reader': 'wraps each row to the first connection its labels reach, not to the others',
  'ignore-rate-limit': 'sends again 0.1 s after a 429, whatever Retry-After / retry_after_seconds say',
  'stale-labels': "(--task edit) after a 409 re-reads the text but re-seals the labels it first read, putting back the owner's removal",
  'bare-pairing': 'pairs with a name and a key but no authorization_details (and no PAR request_uri)',
  'write-first': 'saves a note about the task (about the user) before it has read anything',
  'topic-in-metadata': "names each memory's topic in its metadata (metadata.topic) besides filing it by about",
  'local-client-uri': 'pairs with client_uri https://localhost:8443/agent',
  'poll-grant-fast': 'polls its pending grant request every 0.1 s',
  'no-policies-read': 'after an approval retries the refused call without reading GET /api/agent/policies',
  'ask-again-after-denial': 'sends the same grant request again after the owner denied it',
  'relabel-others': 'corrects a memory another wrote (with Read & write on all memories) and adds the category misc to it',
  'copy-to-relabel': '(--task relabel) adds the label food by posting a copy of its reminder under the new labels',
  'fixture-wraps': "wraps each row to the other connections with the spec example's self_wrap bytes",
  'ask-held': 'asks, once paired, for what its pairing already holds (missing-permission: personal emails)',
  'ask-without-reason': 'asks, of its own accord, for Read personal info (cards) with no reason',
  'ask-with-level': 'asks for Read personal info (cards) with level: read beside its permissions',
  'new-client-on-continue': 'meets 401 SESSION_ENDED (recovery: continue) by pairing with a new client_id',
  'no-share-on-add': "(--task relabel) adds the label food to its reminder and never wraps the key to the connections it newly reaches",
  'credentials-in-memory': "(accounts) writes the sign-up's email and password into the memory it saves about the account",
  'api-key-as-password': '(accounts) sends the API key through the credential route instead of adding it as a secret field',
  'no-idempotency-key': '(accounts) creates the account and its address without an idempotency_key',
  'second-address': '(accounts) creates the address again for the same service with a fresh idempotency_key',
  'headered-password': '(accounts) seals the password with a SealedBlob header ([0x01][0x02]) where the headerless envelope belongs',
  'account-name-in-memory': "(accounts) files its memory about the account with the service's name as observation.entityName",
  'unlock-retry-fast': '(accounts) sends a `preparing` unlock again after 1 s, whatever its retry_after_seconds',
  'unlock-ask-again': '(slow-unlock) sends the unlock request again each time its poll still reads `pending`',
  'edit-assumed': "(late-edit, accounts) queues the address's rename and takes the 202 for done, never polling the edit",
  'edit-twice': "(late-edit, accounts) queues the address's rename again each time its poll still reads `pending`",
};
const ALIASES = { 'raw-owner-wrap': 'wrong-owner-wrap', 'bad-kid': 'kid-mismatch', 'poll-fast': 'fast-poll' };
const TASKS = ['save', 'edit', 'relabel', 'read'];
const MEMORIES = '/api/agent/context/memories';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const CLIENT_ID = process.env.DECOY_CLIENT_ID || 'decoy-check-node-agent'; // the same client_id reconnects the same connection
const ATTEMPTS = 5; // sends of one request whose outcome stays unknown (or is 429/503)
const PREPARING_WAIT = Number(process.env.DECOY_PREPARING_WAIT || 90); // s of reading while rows are owed
const GRANT_WAIT = 600; // s: "Poll GET /api/agent/grant-request?id= every few seconds for up to about ten minutes"

// the ask-* bugs' asks of the agent's own (not a refusal's permission_request), sent once it is paired
const CARDS = { permissions: ['personal.read'], record_type: 'cards', reason: "Pay for the trip's booking." };
const EXTRA_ASKS = {
  'ask-held': { permissions: ['personal.read'], record_type: 'emails', reason: 'Read the booking email.' },
  'ask-without-reason': { permissions: CARDS.permissions, record_type: CARDS.record_type },
  'ask-with-level': { ...CARDS, level: 'read' },
};
class UsageError extends Error {}
class Denied extends Error {} // the owner said no (or let the ask expire): the task ends, nothing more is asked
const say = (...words) => console.error('agent:', ...words);
const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const unb64 = (text) => new Uint8Array(Buffer.from(text, 'base64'));
const utf8 = new TextEncoder();
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const random = (n) => webcrypto.getRandomValues(new Uint8Array(n));
const sleep = (s) => new Promise((done) => setTimeout(done, Math.max(0, s) * 1000));
const short = (id) => String(id).slice(0, 8) + '…';

function parseArgs(argv) {
  const opts = { task: 'save', topic: 'Lisbon trip', bug: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new UsageError(`${a} takes a value`);
      return argv[++i];
    };
    if (a === '--bug') opts.bug = value();
    else if (a === '--task') opts.task = value();
    else if (a === '--topic') opts.topic = value();
    else if (a === '-h' || a === '--help') opts.help = true;
    else throw new UsageError(`unknown argument ${a}`);
  }
  if (opts.bug) opts.bug = ALIASES[opts.bug] || opts.bug;
  if (opts.bug && !BUGS[opts.bug]) throw new UsageError(`--bug takes one of ${Object.keys(BUGS).join(', ')}`);
  if (!TASKS.includes(opts.task)) throw new UsageError(`--task takes one of ${TASKS.join(', ')}`);
  return opts;
}
const OPTS = (() => {
  try {
    return parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`agent: ${err.message}`);
    process.exit(2);
  }
})();
const BUG = OPTS.bug;
const BASE = (process.env.DECOY_BASE_URL || '').replace(/\/+$/, '');

// -- HTTP ----------------------------------------------------------------------------------------
// One exchange. Throws an Error with `status` for an answered non-2xx, and with `unknown: true`
// when the outcome cannot be known (no answer, a cut answer, a 5xx).
const session = { access: null, refresh: null, tokenId: null, clientId: CLIENT_ID, me: null, granted: [] };
async function exchange(method, path, body, { form = false, auth = true } = {}) {
  const headers = { accept: 'application/json' };
  if (auth && session.access) headers.authorization = `Bearer ${session.access}`;
  let url = BASE + path;
  if (BUG === 'token-in-url' && auth && session.access && method === 'GET') {
    url += (url.includes('?') ? '&' : '?') + `access_token=${encodeURIComponent(session.access)}`;
  }
  let data;
  if (body !== undefined) {
    headers['content-type'] = form ? 'application/x-www-form-urlencoded' : 'application/json';
    data = form ? new URLSearchParams(body).toString() : JSON.stringify(body);
  }
  let res, text;
  try {
    res = await fetch(url, { method, headers, body: data, signal: AbortSignal.timeout(30_000) });
    text = await res.text();
  } catch (cause) {
    const err = new Error(`${method} ${path}: no answer (${cause.cause?.code || cause.name || cause.message})`);
    err.unknown = true;
    err.status = res?.status;
    throw err;
  }
  let answer = {};
  try {
    answer = text ? JSON.parse(text) : {};
  } catch {
    answer = { message: text.slice(0, 200) };
  }
  if (res.ok) return answer;
  const code = answer.code || answer.error || '';
  const err = new Error(`${method} ${path} → ${res.status} ${code}: ${answer.error_description || answer.message || (typeof answer.error === 'string' && answer.error !== code ? answer.error : '')}`);
  err.status = res.status;
  err.code = code;
  err.answer = answer;
  err.unknown = res.status >= 500;
  // 429 / 503: wait Retry-After (header) or retry_after_seconds (body), the longer when both are given
  const waits = [res.headers.get('retry-after'), answer.retry_after_seconds]
    .filter((v) => v !== null && v !== undefined && v !== '').map(Number).filter((n) => Number.isFinite(n) && n >= 0);
  if (waits.length) err.retryAfter = Math.max(...waits);
  return Promise.reject(err);
}

// An authenticated call, with the spec's recoveries:
// - an unknown outcome (no answer, a 5xx) or a 429: send the SAME body again, after Retry-After
//   (or 1, 2, 4 … s); `makeBody` is called once, so a retry never carries new rows or ids;
// - 401 with `recovery: refresh`: refresh the token once, then send again;
// - 403 with a `permission_request`: send it unchanged to grant-request on this same connection,
//   wait for the owner, then send again (never pair again).
async function call(method, path, makeBody) {
  let body = typeof makeBody === 'function' ? await makeBody() : makeBody;
  let refreshed = false;
  let asked = false;
  let continued = false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await exchange(method, path, body);
    } catch (err) {
      if (err.status === 401 && err.answer?.recovery === 'refresh' && !refreshed) {
        say(`${method} ${path}: ${err.code}; refreshing the access token`);
        await refresh();
        refreshed = true;
        attempt--;
        continue;
      }
      if (err.status === 401 && err.answer?.recovery === 'continue' && !continued) {
        // SESSION_ENDED / TOKEN_SUPERSEDED: the connection lives on; reconnect it with the same client_id
        say(`${method} ${path}: ${err.code}; reconnecting with the same client_id`);
        if (BUG === 'new-client-on-continue') session.clientId = `${CLIENT_ID}-again`; // another connection
        await pair(session.me);
        continued = true;
        attempt--;
        continue;
      }
      if (err.status === 403 && err.answer?.permission_request && !asked) {
        await askFor(err.answer.permission_request, err);
        asked = true;
        attempt--;
        continue;
      }
      if (!(err.unknown || err.status === 429) || attempt >= ATTEMPTS) throw err;
      const wait = BUG === 'ignore-rate-limit' && err.status === 429 ? 0.1 : err.retryAfter ?? 2 ** (attempt - 1);
      say(`${method} ${path}: ${err.unknown ? 'outcome unknown' : 'rate limited'} (${err.message}); sending the same request again in ${wait} s`);
      await sleep(wait);
      if (BUG === 'new-rows-on-retry' && typeof makeBody === 'function') body = await makeBody();
    }
  }
}
const get = (path) => call('GET', path);

// -- the byte formats (000 "Exact formats") ------------------------------------------------------
const OAEP256 = { name: 'RSA-OAEP', hash: 'SHA-256' };
async function newKeyPair() {
  const pair = await subtle.generateKey({ ...OAEP256, modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) },
    true, ['encrypt', 'decrypt']);
  return { privateKey: pair.privateKey, publicKeyBase64: b64(await subtle.exportKey('spki', pair.publicKey)) };
}
// kid = lowercase hex of the first 8 bytes of SHA-256(key)
async function kidOf(key) {
  return hex(new Uint8Array(await subtle.digest('SHA-256', key)).subarray(0, 8));
}
async function gcm(op, rawKey, iv, data) {
  const key = await subtle.importKey('raw', rawKey, { name: 'AES-GCM' }, false, [op]);
  return new Uint8Array(await subtle[op]({ name: 'AES-GCM', iv }, key, data));
}
// VAULT SealedBlob: [0x01 version][0x01 mode][12-byte nonce][AES-256-GCM ciphertext][16-byte tag], no AAD
async function sealVault(key, plaintext) {
  const nonce = random(12);
  return Uint8Array.from([1, 1, ...nonce, ...(await gcm('encrypt', key, nonce, plaintext))]);
}
async function openVault(key, blob) {
  if (blob.length < 30 || blob[0] !== 1 || blob[1] !== 1) throw new Error('not a VAULT SealedBlob');
  return gcm('decrypt', key, blob.subarray(2, 14), blob.subarray(14));
}
// Headerless envelope: [2-byte BE key length][RSA-OAEP-SHA256 wrapped AES-256 key][12-byte IV][AES-256-GCM ct][16-byte tag]
async function envelope(payload, publicKeyBase64) {
  const pub = await subtle.importKey('spki', unb64(publicKeyBase64), OAEP256, false, ['encrypt']);
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
// owner_wrap = [0x01][0x02] + the envelope to owner_public_key, whose plaintext is the key's 44-character base64 TEXT
async function ownerWrap(key, ownerPublicKey) {
  const payload = BUG === 'wrong-owner-wrap' ? key : utf8.encode(b64(key));
  return Uint8Array.from([1, 2, ...(await envelope(payload, ownerPublicKey))]);
}

// -- who else reads a new row (000 "Who reads a topic"; grantees from memory-grantees) -----------
// The reasons a grant (`selectors`) reaches a row by its labels: `all` (never a memory about an
// account), each category it holds, the row's topic or account; a relation only when every end is held.
function reasonsFor(sel, plain) {
  sel = sel || {};
  const topics = new Set((sel.topics || []).map((t) => (String(t).startsWith('topic:') ? t : `topic:${t}`)));
  const accounts = new Set((sel.account_ids || []).map((a) => `account:${a}`));
  const out = [];
  if (plain.observation) {
    const about = String((plain.about || [])[0] || '');
    const onAccount = about.startsWith('account:');
    if (sel.all && !onAccount) out.push('all');
    for (const c of plain.categories || []) if ((sel.categories || []).includes(c)) out.push(`category:${c}`);
    if (topics.has(about) || accounts.has(about) || (onAccount && sel.account_wildcard)) out.push(about);
  } else if (plain.entity) {
    if (sel.all) out.push('all');
    if (topics.has(`topic:${plain.row_id}`)) out.push(`topic:${plain.row_id}`);
  } else if (plain.relation) {
    const ends = plain.endpoints.filter((e) => e !== 'user');
    if (sel.all) out.push('all');
    else if (ends.length && ends.every((e) => topics.has(e))) out.push(ends.length === 1 ? ends[0] : `and:${ends.join('+')}`);
  }
  return [...new Set(out)];
}
// A reason the grant holds, whatever the row (only the wrap-too-far bug uses it).
function anyReason(sel) {
  if (!sel) return '';
  if (sel.all) return 'all';
  if (sel.categories?.length) return `category:${sel.categories[0]}`;
  if (sel.topics?.length) return String(sel.topics[0]).startsWith('topic:') ? sel.topics[0] : `topic:${sel.topics[0]}`;
  if (sel.account_ids?.length) return `account:${sel.account_ids[0]}`;
  return '';
}

// One row: its own random 32-byte key, kid, VAULT ciphertext, owner_wrap and self_wrap (and the
// grantees' wraps, so other connections whose grants reach it read it at once: each under the
// reasons its grant holds on the row's labels). Only the ciphertext carries the plaintext. A
// rotation (`rotating`) is the same: a new key and kid, and wraps for whoever the labels reach.
const ONE_KEY = random(32); // the one-key bug's key for every row
// the spec's example self_wrap (POST memories), for a discarded test key: only the fixture-wraps bug sends it
const FIXTURE_WRAP = 'AQBN7UA0MS7gKpdwFyJokbYLMPHh1XG+w4TsosfQFCOmZm+SGEnOvUBsM51Opqe4EdRxS6QMQAZd0oPRbvjP7na5qLBEaKywCQvd7R37FGejE1JbucnN31wx0X9Rc+x7qFtJRvWds5NXPxnuH7HroDSx3CKkpHerPC5BSt6KHOovWTLnBEf+lzHf8zBdpHP+VN8h0Qlde0eRpq0tLPJBs0KRB3PtZeJfQrgW8Jli21s+O1moH9SWJ2p+V5+A/1BWF3IuxQBpIGDT9HjyNja5iI0D+zvNyBCklOuYUHh7ApnF8cPj4WT6G2SKt/fnUEpYo606eWiKnPRGNxqpRz3jFdsVQi/fSotd1sNqpZ5j7N1ZAfPBB0QGNRnxXh0zTWNghJs4+1fDx046Baim7cSyRIDtaUfZS9yYYvYm3Wpp';
const unpadded = (text) => (BUG === 'unpadded-base64' ? text.replace(/=+$/, '') : text);
async function sealRow(plaintext, keys, { rotating = false } = {}) {
  const key = BUG === 'one-key' && !rotating ? ONE_KEY : random(32);
  const row = {
    id: plaintext.row_id,
    kid: await kidOf(BUG === 'kid-mismatch' ? random(32) : key),
    ciphertext: unpadded(b64(await sealVault(key, utf8.encode(JSON.stringify(plaintext))))),
    owner_wrap: unpadded(b64(await ownerWrap(key, keys.ownerPublicKey))), // always padded: 332 bytes
  };
  if (BUG !== 'no-self-wrap') row.self_wrap = b64(await envelope(key, keys.agentPublicKey));
  if (BUG === 'text-in-body' && plaintext.observation) row.preview = plaintext.observation.content.split('\n')[0];
  const wraps = [];
  for (const g of keys.grantees) {
    let via = reasonsFor(g.selectors, plaintext);
    if (BUG === 'wrap-too-far' && !via.length && anyReason(g.selectors)) via = [anyReason(g.selectors)];
    const wrapped = BUG === 'fixture-wraps' ? FIXTURE_WRAP : b64(await envelope(key, g.public_key));
    if (via.length && wraps.length < 100) wraps.push({ token_id: g.token_id, via, wrapped_key: wrapped });
    if (BUG === 'wrap-one-reader' && wraps.length) break;
  }
  if (wraps.length) row.grantee_wraps = wraps;
  return row;
}
async function newTopicRows({ name, type = '', relationType = 'is interested in' }, keys) {
  const entityId = webcrypto.randomUUID();
  const relationId = webcrypto.randomUUID();
  const entity = { v: 2, row_id: entityId, entity: { name, entityType: type }, about: [] };
  const relation = {
    v: 2, row_id: relationId, relation: { from: 'default_user', to: name, relationType },
    endpoints: ['user', `topic:${entityId}`], about: [],
  };
  return { topic: { id: `topic:${entityId}`, name }, rows: [await sealRow(entity, keys), await sealRow(relation, keys)] };
}
async function newMemoryRow({ topic, text, categories = [] }, keys) {
  const rowId = webcrypto.randomUUID();
  const plaintext = { v: 2, row_id: rowId, observation: { entityName: topic.name, content: text }, about: [topic.id] };
  if (categories.length) plaintext.categories = [...new Set(categories)];
  if (BUG === 'topic-in-metadata') plaintext.metadata = { topic: topic.name }; // files nothing there
  return sealRow(plaintext, keys);
}

// -- reading (000 "Reading") ---------------------------------------------------------------------
// A served row: wrapped_key is a headerless envelope to this agent whose plaintext is the raw key.
async function openServed(row, privateKey) {
  const key = await openEnvelope(unb64(row.wrapped_key), privateKey);
  if ((await kidOf(key)) !== row.kid) throw new Error(`kid ${row.kid} is not the fingerprint of its key`);
  const plain = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(await openVault(key, unb64(row.ciphertext))));
  if (plain?.v !== 2 || plain.row_id !== row.id) throw new Error('its plaintext is not bound to this row (v, row_id)');
  return { row, key, plain };
}
async function openAll(served, privateKey) {
  const opened = new Map();
  const unreadable = [];
  for (const row of served) {
    try {
      opened.set(row.id, await openServed(row, privateKey));
    } catch (err) {
      unreadable.push({ id: row.id, reason: err.message });
    }
  }
  return { opened, unreadable };
}
// normalizeTopicName: NFKC, lowercase, collapse whitespace, trim, strip surrounding quotes
const QUOTES = `"'“”‘’\``;
function normalizeTopicName(name) {
  let s = String(name).normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
  while (s.length && QUOTES.includes(s[0])) s = s.slice(1).trim();
  while (s.length && QUOTES.includes(s[s.length - 1])) s = s.slice(0, -1).trim();
  return s;
}
// Every topic this connection can see: the entity rows it opens, plus every topic:<id> named by a
// memory it opens (its name from entityName). Same-name topics are listed once, oldest first.
function listTopics(opened) {
  const byId = new Map();
  const note = (id, name, type, at) => {
    const t = byId.get(id);
    if (!t) byId.set(id, { id, name, type, at });
    else if (at < t.at) t.at = at;
  };
  for (const { row, plain } of opened.values()) {
    if (plain.entity) note(`topic:${row.id}`, plain.entity.name, plain.entity.entityType ?? '', row.created_at || '');
  }
  for (const { row, plain } of opened.values()) {
    const about = plain.observation && Array.isArray(plain.about) ? plain.about[0] : null;
    if (typeof about === 'string' && about.startsWith('topic:') && !byId.has(about)) {
      note(about, plain.observation.entityName || '', null, row.created_at || '');
    }
  }
  const byName = new Map();
  for (const t of [...byId.values()].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))) {
    const k = normalizeTopicName(t.name);
    if (!byName.has(k)) byName.set(k, { ...t, ids: [t.id] });
    else byName.get(k).ids.push(t.id);
  }
  return [...byName.values()];
}
function findTopic(topics, nameOrId) {
  if (String(nameOrId).startsWith('topic:')) return topics.find((t) => t.ids.includes(nameOrId)) || null;
  return topics.find((t) => normalizeTopicName(t.name) === normalizeTopicName(nameOrId)) || null;
}
const owed = (answer) => Boolean((answer.preparing && answer.preparing.length) || answer.preparing_others > 0 || answer.preparing_unknown);

// GET memories, and again while rows are still `preparing` (never sooner than retry_after_seconds):
// rows still owed are missing from `memories`, not gone, so nothing is saved in their place.
async function readMemories(me) {
  const started = Date.now();
  for (;;) {
    const answer = await get(MEMORIES);
    if (!owed(answer)) {
      if (answer.failed?.length || answer.failed_others || answer.failed_unknown) {
        say(`some rows are not shared with this connection (${answer.recovery || 'failed'}); carrying on with what it can read`);
      }
      return { served: answer.memories || [], ...(await openAll(answer.memories || [], me.privateKey)) };
    }
    const count = (answer.preparing || []).length + (answer.preparing_others || 0);
    const waited = (Date.now() - started) / 1000;
    if (waited >= PREPARING_WAIT) {
      throw new Error(`${count || 'some'} rows are still preparing after ${Math.round(waited)} s: please open Decoy on your phone, then run this again (nothing was saved, so no topic is made twice)`);
    }
    const wait = BUG === 'ignore-retry-after' ? 0.2 : Number(answer.retry_after_seconds ?? 5);
    say(`${count || 'some'} rows are still being shared by the owner's phone (${answer.waiting_on || 'owner_phone'}); reading again in ${wait} s`);
    await sleep(wait);
  }
}

// -- pairing: OAuth device grant (RFC 8628) with PAR (RFC 9126) ----------------------------------
async function pair(me) {
  const authorization_details = [{ permissions: ['memory.save'] }, { permissions: ['memory.read'] }]; // memory.save is asked alone
  let ask = {}; // the bare-pairing bug asks for nothing by name: no authorization_details, no request_uri
  if (BUG !== 'bare-pairing') {
    try {
      const par = await exchange('POST', '/oauth/par', { client_id: session.clientId, authorization_details }, { auth: false });
      ask = { request_uri: par.request_uri };
    } catch (err) {
      if (err.status !== 404 && err.status !== 405) throw err;
      ask = { authorization_details }; // no PAR endpoint: the same rows inline
    }
  }
  const dev = await exchange('POST', '/oauth/device', {
    client_id: session.clientId, name: 'Check example agent (Node)', platform: 'oauth', agent_public_key: me.publicKeyBase64, ...ask,
    ...(BUG === 'local-client-uri' ? { client_uri: 'https://localhost:8443/agent' } : {}),
  }, { auth: false });
  say(`pairing: approve in the Decoy app: ${dev.verification_uri_complete || dev.verification_uri} (code ${dev.user_code})`);
  let interval = Number(dev.interval || 5);
  const deadline = Date.now() + Number(dev.expires_in || 600) * 1000;
  const form = { grant_type: DEVICE_GRANT, device_code: dev.device_code, client_id: session.clientId };
  for (;;) {
    const wait = BUG === 'fast-poll' ? 1 : interval;
    if (Date.now() + wait * 1000 >= deadline) throw new Error('the pairing link expired before the owner approved');
    await sleep(wait);
    try {
      const token = await exchange('POST', '/oauth/token', form, { form: true, auth: false });
      Object.assign(session, { access: token.access_token, refresh: token.refresh_token, tokenId: token.token_id });
      // what the owner granted, by name (the accounts scenario's owner adds account.create)
      session.granted = (token.authorization_details || []).filter((d) => d && typeof d === 'object');
      say(`paired: connection ${token.token_id}`);
      return token;
    } catch (err) {
      if (err.code === 'slow_down') {
        if (BUG !== 'fast-poll') interval = Math.max(interval + 5, Number(err.answer?.interval || 0));
        say(`slow_down: polling every ${interval} s`);
      } else if (err.code !== 'authorization_pending' && !err.unknown) {
        throw err;
      }
    }
  }
}

// A refresh token is used once: the answer replaces both tokens. Sent again only when its answer
// was lost (no answer at all), never after an answered use.
async function refresh() {
  const form = { grant_type: 'refresh_token', refresh_token: session.refresh, client_id: session.clientId };
  for (let attempt = 1; ; attempt++) {
    try {
      const token = await exchange('POST', '/oauth/token', form, { form: true, auth: false });
      Object.assign(session, { access: token.access_token, refresh: token.refresh_token });
      say('refreshed the access token (same connection)');
      return;
    } catch (err) {
      if (!err.unknown || attempt >= 3) {
        const how = err.answer?.recovery === 're_pair' ? ': this connection needs a new pairing, approved by the owner' : '';
        throw new Error(`the token could not be refreshed (${err.message})${how}`);
      }
      await sleep(err.retryAfter ?? attempt);
    }
  }
}

// 403 with permission_request: send it as the body of grant-request, unchanged, on this connection.
async function askFor(permissionRequest, refusal, asked = 1) {
  say(`${refusal.code}: asking the owner for ${JSON.stringify(permissionRequest.permissions || permissionRequest)} on this connection`);
  let answer;
  for (let attempt = 1; ; attempt++) {
    try {
      answer = await exchange('POST', '/api/agent/grant-request', permissionRequest);
      break;
    } catch (err) {
      if (err.status === 409 && err.answer?.request_id) { answer = { ...err.answer, status: 'pending' }; break; }
      if (!(err.unknown || err.status === 429 || err.code === 'REVIEW_BUSY') || attempt >= ATTEMPTS) throw err;
      await sleep(err.retryAfter ?? attempt);
    }
  }
  if (answer.status === 'already_granted') return;
  say(`asked (request ${short(answer.request_id)}): approve it in the Decoy app`);
  const deadline = Date.now() + GRANT_WAIT * 1000;
  while (Date.now() < deadline) {
    await sleep(BUG === 'poll-grant-fast' ? 0.1 : 3);
    let status;
    try {
      status = (await exchange('GET', `/api/agent/grant-request?id=${encodeURIComponent(answer.request_id)}`)).status;
    } catch (err) {
      if (!(err.unknown || err.status === 429)) throw err;
      await sleep(Math.max(0, (err.retryAfter ?? 0) - 3)); // the loop's 3 s, and whatever more the 429 asked
      continue;
    }
    if (status === 'approved' || status === 'resolved') {
      say(`the owner answered (${status})`);
      return BUG === 'no-policies-read' ? undefined : readAccess(); // what the owner granted, not what was asked
    }
    if (status === 'denied' && BUG === 'ask-again-after-denial' && asked === 1) {
      say('the owner denied the request; asking again');
      return askFor(permissionRequest, refusal, asked + 1);
    }
    if (status !== 'pending') throw new Denied(`the owner's answer to the request: ${status}; nothing more is asked`);
  }
  throw new Error('the owner did not answer the request in ten minutes');
}

// What this connection may do: access.memories on GET /api/agent/policies (never scopes).
async function readAccess() {
  const { access } = await get('/api/agent/policies');
  const m = access?.memories || {};
  const reach = (s) => (s && (s.all || s.categories?.length || s.topics?.length || s.account_ids?.length) ? 'yes' : 'no');
  say(`access.memories: save ${m.save ? 'yes' : 'no'}, read ${reach(m.read)}, write ${reach(m.write)}, delete ${reach(m.delete)}`);
  return m;
}

// -- the tasks -----------------------------------------------------------------------------------
const STATUS_BEFORE = 'Status: no flight chosen yet.';
const STATUS_AFTER = 'Status: chose the Friday 08:10 direct flight; not booked yet.';

async function save(me, keys, subject) {
  if (BUG === 'write-first') {
    const note = { v: 2, row_id: webcrypto.randomUUID(), observation: { entityName: 'default_user', content: `Started a task: ${subject}.` }, about: ['user'], categories: ['misc'] };
    const row = await sealRow(note, keys);
    await call('POST', MEMORIES, { rows: [row] });
    say(`saved a note ${short(row.id)} before reading anything`);
  }
  const { opened } = await readMemories(me);
  const topics = listTopics(opened);
  let topic = BUG === 'new-topic' ? null : findTopic(topics, subject);
  say(`read first: ${opened.size} rows open, ${topics.length} topics; ${topic ? `reusing topic ${short(topic.id.slice(6))} ${JSON.stringify(topic.name)}` : `no topic ${JSON.stringify(subject)} yet: creating it with its first memory`}`);
  const text = [`${subject}: flight search, intermediate result.`,
    'Finding: direct morning flights run on Tuesdays and Fridays only (checked 2026-10-05).', STATUS_BEFORE,
    ...(BUG === 'password-in-text' ? ['Airline account: TAP login password: Lisb0n-2026!'] : [])].join('\n');
  let rows = [];
  const makeBody = async () => {
    rows = [];
    let t = topic;
    if (!t) {
      const made = await newTopicRows({ name: subject, type: 'trip', relationType: 'is planning' }, keys);
      t = made.topic;
      rows.push(...made.rows);
    }
    rows.push(await newMemoryRow({ topic: t, categories: ['travel'], text }, keys));
    return { rows, topic: t };
  };
  let built = null;
  const answer = await call('POST', MEMORIES, async () => {
    built = await makeBody();
    return { rows: built.rows };
  });
  topic = built.topic;
  const memory = rows[rows.length - 1];
  say(`saved ${rows.length} rows (created ${answer.created?.length ?? 0}, existing ${answer.existing?.length ?? 0}); memory ${short(memory.id)}`);
  await readBack(me, rows, text);
  return { topic, memoryId: memory.id, rowIds: rows.map((r) => r.id) };
}

// Read back every row written and its usable wrap: it opens with this agent's key and says what was sent.
async function readBack(me, rows, text) {
  const { opened } = await readMemories(me);
  for (const r of rows) {
    const o = opened.get(r.id);
    if (!o) throw new Error(`row ${r.id} does not read back with this connection's key`);
    if (o.plain.observation && text !== undefined && o.plain.observation.content !== text) {
      throw new Error(`memory ${r.id} reads back with other text`);
    }
  }
  say(`read back ${rows.length} rows: each opens with this agent's key and is bound to its id`);
}

async function edit(me, memoryId, keys) {
  let labels = null; // the labels of the first read (the stale-labels bug seals them again after a 409)
  for (let attempt = 1; attempt <= 4; attempt++) {
    const { opened } = await readMemories(me);
    const current = opened.get(memoryId);
    if (!current) throw new Error(`memory ${memoryId} does not read back`);
    if (attempt > 1 && current.plain.observation.content.includes(STATUS_AFTER) && !current.plain.observation.content.includes(STATUS_BEFORE)) {
      say(`memory ${short(memoryId)} already reads corrected (an earlier PUT whose answer was lost committed)`);
      return current.plain.observation.content;
    }
    // Re-seal the whole plaintext with only the content changed; same id, same key (kid).
    const plain = { ...current.plain, observation: { ...current.plain.observation } };
    plain.observation.content = plain.observation.content.replace(STATUS_BEFORE, STATUS_AFTER);
    if (labels === null) labels = [...(current.plain.categories || [])];
    else if (BUG === 'stale-labels') plain.categories = labels;
    if (BUG === 'correct-as-new') { // the correction as another memory, beside the one it corrects
      const row = await sealRow({ ...plain, row_id: webcrypto.randomUUID() }, keys);
      await call('POST', MEMORIES, { rows: [row] });
      say(`saved the correction as a new memory ${short(row.id)}`);
      await readBack(me, [row], plain.observation.content);
      return plain.observation.content;
    }
    const body = { id: memoryId, expected_rev: current.row.rev, ciphertext: b64(await sealVault(current.key, utf8.encode(JSON.stringify(plain)))) };
    try {
      const done = await call('PUT', MEMORIES, body);
      say(`corrected memory ${short(memoryId)} (rev ${done.rev})`);
      const after = (await readMemories(me)).opened.get(memoryId);
      if (!after || !after.plain.observation.content.includes(STATUS_AFTER)) throw new Error(`memory ${memoryId} does not read back corrected`);
      return after.plain.observation.content;
    } catch (err) {
      if (!(err.status === 409 && err.code === 'REV_CONFLICT')) throw err;
      say(`409 REV_CONFLICT: memory ${short(memoryId)} changed since it was read; reading it again`);
    }
  }
  throw new Error(`memory ${memoryId} kept changing; it was not corrected`);
}

// Save a reminder filed under the topic with two labels, then remove the label `misc` (000
// "Editing"): removing a label rotates the key, so a connection that had the row only through
// `misc` stops getting it. The PUT carries the whole plaintext re-sealed under a NEW key and kid,
// owner_wrap, self_wrap, grantee_wraps for every connection the remaining labels still reach,
// and removed_reasons; on 409 REV_CONFLICT it re-reads and does it again from the current row.
const REMINDER = 'Reminder: check in online 24 h before the flight.';
// An edit that only adds a label keeps the key (a plain PUT, no kid); the key then goes to each
// connection the new label newly reaches, with POST memory-wraps (001: "An edit that only adds
// labels … keeps the key; the writer wraps it to the newly eligible connections").
async function addLabel(me, current, keys, category) {
  const before = current.plain;
  const after = { ...before, categories: [...new Set([...(before.categories || []), category])] };
  if (BUG === 'copy-to-relabel') { // the same memory again under the new labels: a new id and key
    const copy = await sealRow({ ...after, row_id: webcrypto.randomUUID() }, keys);
    await call('POST', MEMORIES, { rows: [copy] });
    say(`saved a copy ${short(copy.id)} of ${short(current.row.id)} with the label ${category}`);
    await readMemories(me);
    return;
  }
  const body = { id: current.row.id, expected_rev: current.row.rev, ciphertext: b64(await sealVault(current.key, utf8.encode(JSON.stringify(after)))) };
  await call('PUT', MEMORIES, body);
  const wraps = [];
  for (const g of keys.grantees) {
    const via = reasonsFor(g.selectors, after);
    if (via.length && !reasonsFor(g.selectors, before).length) {
      wraps.push({ token_id: g.token_id, via, wrapped_key: b64(await envelope(current.key, g.public_key)) });
    }
  }
  say(`added the label ${category} to ${short(current.row.id)}, same key; ${wraps.length} connection(s) newly reach it`);
  if (wraps.length && BUG !== 'no-share-on-add') {
    await call('POST', '/api/agent/context/memory-wraps', { row_id: current.row.id, kid: current.row.kid, wraps });
  }
  const back = (await readMemories(me)).opened.get(current.row.id);
  if (!back || !(back.plain.categories || []).includes(category)) throw new Error(`memory ${current.row.id} does not read back with ${category}`);
}

// With Read & write on every memory (access.memories.write), correct the text of one another wrote:
// its text only, its labels byte-identical (000 "a connection editing someone else's memory with
// Read & write may correct its text, and must leave its labels byte-identical").
async function correctOthers(me, mine) {
  const { opened } = await readMemories(me);
  const theirs = [...opened.values()].find((o) => !mine.has(o.row.id) && o.plain.observation
    && !String((o.plain.about || [''])[0]).startsWith('account:')); // those are acctmem.*
  if (!theirs) return null;
  const observation = { ...theirs.plain.observation, content: `${theirs.plain.observation.content.trimEnd()} (Checked with the person.)` };
  const plain = { ...theirs.plain, observation };
  if (BUG === 'relabel-others') plain.categories = [...(plain.categories || []), 'misc'];
  const body = { id: theirs.row.id, expected_rev: theirs.row.rev, ciphertext: b64(await sealVault(theirs.key, utf8.encode(JSON.stringify(plain)))) };
  await call('PUT', MEMORIES, body);
  say(`corrected the text of memory ${short(theirs.row.id)}, which another wrote`);
  return theirs.row.id;
}

async function relabel(me, keys, topic) {
  const note = await newMemoryRow({ topic, text: REMINDER, categories: ['travel', 'misc'] }, keys);
  await call('POST', MEMORIES, { rows: [note] });
  say(`saved reminder ${short(note.id)} (travel, misc)`);
  for (let attempt = 1; attempt <= 4; attempt++) {
    const { opened } = await readMemories(me);
    const current = opened.get(note.id);
    if (!current) throw new Error(`memory ${note.id} does not read back with this connection's key`);
    const labels = current.plain.categories || [];
    if (!labels.includes('misc')) {
      say(`reminder ${short(note.id)} already reads without misc (an earlier PUT whose answer was lost committed)`);
      return { reminder_id: note.id, kid: current.row.kid };
    }
    const plain = { ...current.plain, categories: labels.filter((c) => c !== 'misc') };
    const fresh = await sealRow(plain, keys, { rotating: true });
    const body = { ...fresh, expected_rev: current.row.rev, removed_reasons: ['category:misc'] };
    try {
      const done = await call('PUT', MEMORIES, body);
      say(`removed the label misc from ${short(note.id)}: new key ${fresh.kid}, ${fresh.grantee_wraps?.length ?? 0} grantee wraps (rev ${done.rev})`);
    } catch (err) {
      if (!(err.status === 409 && err.code === 'REV_CONFLICT')) throw err;
      say(`409 REV_CONFLICT: reminder ${short(note.id)} changed since it was read; reading it again`);
      continue;
    }
    const after = (await readMemories(me)).opened.get(note.id);
    if (!after || after.row.kid !== fresh.kid || (after.plain.categories || []).includes('misc')) {
      throw new Error(`reminder ${note.id} does not read back under its new key without misc`);
    }
    say(`read back reminder ${short(note.id)}: new kid, labels ${JSON.stringify(after.plain.categories || [])}`);
    await addLabel(me, after, keys, 'food');
    return { reminder_id: note.id, kid: fresh.kid };
  }
  throw new Error(`reminder ${note.id} kept changing; its label was not removed`);
}

// -- an account: its Decoy address, password, API key, a memory about it, unlock -----------------
// Run only when the pairing's grant names account.create (`accounts`, `late-edit`) or account.read (`slow-unlock`).
const DECOYS = '/api/agent/decoys';
const ACCOUNTS = '/api/agent/accounts';
const UNLOCK = '/api/agent/unlock';
const grants = (permission) => session.granted.some((d) => (d.permissions || []).includes(permission));

// 001 `decoy_create`: the account and its address in one call, the details sealed to the owner
// (`sealed_details`, with this connection's own copy in `metadata_seals`) and the record an owner
// ENVELOPE ([0x01][0x02] + the headerless envelope: `account_encrypted_data`); the same
// `idempotency_key` on every resend, so a lost answer never mints a second address.
async function signUp(me, keys, service, url) {
  const ownerKey = (await get('/api/agent/public-key')).public_key;
  const details = utf8.encode(JSON.stringify({ serviceName: service, serviceURL: url, agentCreated: true }));
  const password = `Tk-${Buffer.from(random(12)).toString('base64url')}`;
  const apiKey = `sk_live_${hex(random(16))}`;
  const record = { name: service, url, notes: "Signed up for the trip's ticket alerts.", agentCreated: true };
  const create = async (key) => {
    const body = {
      sealed_details: b64(await envelope(details, ownerKey)),
      metadata_seals: [{ token_id: session.tokenId, sealed_envelope: b64(await envelope(details, me.publicKeyBase64)) }],
      account_encrypted_data: b64(Uint8Array.from([1, 2, ...(await envelope(utf8.encode(JSON.stringify(record)), ownerKey))])),
      label: 'acme-tickets',
    };
    if (BUG !== 'no-idempotency-key') body.idempotency_key = key;
    return body;
  };
  const made = await call('POST', DECOYS, () => create(`sign-up-${webcrypto.randomUUID()}`));
  const accountId = made.account_id;
  const email = String(made.email || '');
  say(`created account ${short(accountId)} with its Decoy address`);
  if (BUG === 'second-address') { // "it timed out": a new key for the same sign-up mints another
    await call('POST', DECOYS, () => create(`sign-up-${webcrypto.randomUUID()}`));
    say('created the address again');
  }
  const accountKey = (await get(`${ACCOUNTS}/public-key`)).public_key;
  await setCredential(accountId, accountKey, password);
  if (BUG === 'api-key-as-password') await setCredential(accountId, accountKey, apiKey); // the password's route
  else await addField(me, accountId, 'API key', apiKey);
  let text = `${service}: signed up with a Decoy address for the trip's ticket alerts; the login and API key are on the account.`;
  if (BUG === 'credentials-in-memory') text += `\nCredentials: ${email} / ${password}`;
  const observation = { content: text };
  if (BUG === 'account-name-in-memory') observation.entityName = service; // its id is all a memory about it carries
  const plain = { v: 2, row_id: webcrypto.randomUUID(), observation, about: [`account:${accountId}`], categories: ['technology'] };
  const note = await sealRow(plain, keys);
  await call('POST', MEMORIES, { rows: [note] });
  const back = (await readMemories(me)).opened.has(note.id);
  say(`saved memory ${short(note.id)} about the account (${back ? 'read back' : 'NOT read back'})`);
  const renamed = await rename(String(made.id || made.decoy_id || ''), ownerKey, `${service} alerts`);
  const opened = await unlock(me, accountId);
  const basic = opened?.['basic-auth'];
  const got = basic && typeof basic === 'object' ? basic.password : undefined;
  const said = got === password ? 'verified' : got !== undefined ? 'NOT verified' : 'not read back';
  say(`the account's password through unlock: ${said}`);
  return { account_id: accountId, account_memory_id: note.id, rename: renamed, password_read_back: said };
}

// With Read on some account's logins (an account.read row: the check's `slow-unlock` scenario),
// read the account a memory it reads is filed under (`about: ["account:<id>"]`) through unlock:
// the owner is asked (`pending`), and that one request is polled, never asked again.
async function readFiledAccount(me) {
  const { opened } = await readMemories(me);
  const about = [...opened.values()].flatMap(({ plain }) => (typeof plain.about === 'string' ? [plain.about] : plain.about || []));
  const filed = about.find((a) => typeof a === 'string' && a.startsWith('account:'));
  if (!filed) return {};
  const accountId = filed.slice('account:'.length);
  const got = await unlock(me, accountId, { wait: 60, reason: 'Check the account a memory names before booking.' });
  say(`the account ${short(accountId)} through unlock: ${got ? 'read' : 'not read'}`);
  return { filed_account_id: accountId, filed_account_read: Boolean(got) };
}

// `POST …/credential`: a headerless envelope to the account key, the password's UTF-8 bytes.
async function setCredential(accountId, publicKey, secret) {
  let blob = await envelope(utf8.encode(secret), publicKey);
  if (BUG === 'headered-password') blob = Uint8Array.from([1, 2, ...blob]); // a SealedBlob header where none belongs
  await call('POST', `${ACCOUNTS}/${accountId}/credential`, { encrypted_password: b64(blob) });
  say("set the account's password");
}

// 001 `account_field_create`: a field key and id, the VAULT ciphertext of the field (bound to both
// ids in its plaintext), owner_wrap (the key's base64 text), self_wrap, a wrap for each field-grantee.
async function addField(me, accountId, label, value) {
  const readers = await get(`${ACCOUNTS}/${accountId}/field-grantees`);
  const key = random(32);
  const id = webcrypto.randomUUID();
  const plain = { id, account_id: accountId, fieldType: 'concealed-string', label, value };
  const wraps = [];
  for (const g of readers.grantees || []) {
    if (g.token_id && g.public_key && g.token_id !== session.tokenId) {
      wraps.push({ token_id: g.token_id, wrapped_key: b64(await envelope(key, g.public_key)) });
    }
  }
  const body = {
    id, kid: await kidOf(key),
    ciphertext: b64(await sealVault(key, utf8.encode(JSON.stringify(plain)))),
    owner_wrap: b64(await ownerWrap(key, readers.owner_public_key)),
    self_wrap: b64(await envelope(key, me.publicKeyBase64)),
    grantee_wraps: wraps,
  };
  await call('POST', `${ACCOUNTS}/${accountId}/fields`, body);
  say(`stored the ${label} as a secret field`);
}

// 001 `decoy_edit_request`: the patch sealed to the owner's key and queued ONCE; "The call answers
// `202` at once; poll `GET …/edits/{editId}` for `applied`". A pending edit is waited for, not resent
// ("Queued edits are never dropped").
async function rename(decoyId, ownerKey, name, wait = 40) {
  const patch = utf8.encode(JSON.stringify({ v: 1, set: { serviceName: name } }));
  const body = { sealed_patch: b64(await envelope(patch, ownerKey)) };
  const edits = `${DECOYS}/${decoyId}/edits`;
  let editId = (await call('POST', edits, body)).edit_id;
  if (BUG === 'edit-assumed') { // the 202 taken for done: never polled
    say(`renamed the address to ${JSON.stringify(name)}`);
    return 'assumed';
  }
  const deadline = Date.now() + wait * 1000;
  let status = 'pending';
  while (status === 'pending' && Date.now() < deadline) {
    await sleep(2);
    status = String((await get(`${edits}/${editId}`)).status);
    if (status === 'pending' && BUG === 'edit-twice') editId = (await call('POST', edits, body)).edit_id; // "it did not take"
  }
  say(`the address's rename to ${JSON.stringify(name)}: ${status}`);
  return status;
}

// 001 `unlock_request`: `preparing` → the same request again after `retry_after_seconds`; `pending`
// (the owner is asked) → poll `GET /api/agent/unlock/{id}` every 2.5 s until `ready`, never asking
// again meanwhile; the sealed envelope opened with this agent's key.
async function unlock(me, accountId, { wait = 30, reason = 'Check the saved password reads back.' } = {}) {
  const ask = { target: { kind: 'account', id: accountId }, reason };
  const deadline = Date.now() + wait * 1000;
  while (Date.now() < deadline) {
    let answer = await call('POST', UNLOCK, ask);
    if (answer.available === false) {
      if (answer.state !== 'preparing') return null;
      await sleep(BUG === 'unlock-retry-fast' ? 1 : Number(answer.retry_after_seconds ?? 5));
      continue;
    }
    while (Date.now() < deadline) {
      const polled = await get(`${UNLOCK}/${answer.id}`);
      if (polled.status === 'ready') {
        const item = (polled.items || []).find((i) => i && typeof i === 'object');
        if (!item) return null;
        const opened = JSON.parse(new TextDecoder().decode(await openEnvelope(unb64(item.sealed_envelope), me.privateKey)));
        return opened && typeof opened === 'object' ? opened : null;
      }
      if (polled.status === 'denied' || polled.status === 'expired') return null;
      await sleep(2.5);
      if (polled.status === 'pending' && BUG === 'unlock-ask-again') answer = await call('POST', UNLOCK, ask); // asks anew
    }
  }
  return null;
}

async function main() {
  if (OPTS.help) {
    console.error('usage: DECOY_BASE_URL=… node agent.mjs [--task save|edit|relabel|read] [--topic NAME] [--bug NAME]\nbugs:');
    for (const [name, what] of Object.entries(BUGS)) console.error(`  ${name.padEnd(20)} ${what}`);
    return;
  }
  if (!BASE) throw new UsageError('set DECOY_BASE_URL to the Decoy (or sandbox, or inspector) URL, e.g. http://127.0.0.1:8765');
  if (BUG) say(`--bug ${BUG}: ${BUGS[BUG]}`);
  const me = await newKeyPair();
  session.me = me;
  await pair(me);
  if (EXTRA_ASKS[BUG]) {
    try {
      await askFor(EXTRA_ASKS[BUG], { code: 'an ask of its own' });
    } catch (err) {
      if (err.status !== 400) throw err;
      say(`the ask was refused: ${err.message}`);
    }
  }
  const access = await readAccess();
  if (!access.save && OPTS.task !== 'read') say('this connection cannot save yet: the save will be refused, and its permission_request sent to the owner');
  const g = await get('/api/agent/context/memory-grantees');
  const out = { task: OPTS.task, bug: BUG, token_id: session.tokenId };
  if (OPTS.task === 'read') {
    const { opened, unreadable } = await readMemories(me);
    const topics = listTopics(opened);
    const memories = [...opened.values()].filter((o) => o.plain.observation).length;
    say(`${memories} memories, ${topics.length} topics, ${opened.size - memories} graph rows, ${unreadable.length} unreadable`);
    for (const t of topics) say(`topic ${JSON.stringify(t.name)} (${t.ids.length} cop${t.ids.length === 1 ? 'y' : 'ies'})`);
    Object.assign(out, { memories, topics: topics.length, unreadable: unreadable.map((u) => u.id) });
  } else {
    if (!g.owner_public_key) throw new Error('owner_public_key is null: the owner has not finished key setup in the Decoy app');
    const keys = {
      ownerPublicKey: g.owner_public_key, agentPublicKey: me.publicKeyBase64,
      grantees: (g.grantees || []).filter((x) => x.public_key !== me.publicKeyBase64 && x.token_id !== session.tokenId),
    };
    const saved = await save(me, keys, OPTS.topic);
    Object.assign(out, { topic_id: saved.topic.id, memory_id: saved.memoryId, rows: saved.rowIds });
    if (OPTS.task === 'edit') out.text = await edit(me, saved.memoryId, keys);
    if (OPTS.task === 'relabel') Object.assign(out, await relabel(me, keys, saved.topic));
    if (access.write?.all) out.corrected_other = await correctOthers(me, new Set(saved.rowIds));
    if (grants('account.create')) Object.assign(out, await signUp(me, keys, 'Acme Tickets', 'https://tickets.acme.example'));
    if (grants('account.read')) Object.assign(out, await readFiledAccount(me));
  }
  console.log(JSON.stringify(out));
}

main().catch((err) => {
  console.error(`agent: ${err.message}`);
  if (err instanceof Denied) {
    console.log(JSON.stringify({ task: OPTS.task, bug: BUG, denied: true }));
    return; // the person decided: a task that ends as they chose exits 0
  }
  process.exitCode = err instanceof UsageError ? 2 : 1;
});
