// Memory rows, written from the spec's "Exact formats" (an independent reading, async because
// WebCrypto is): each memory has its own random 32-byte key; `ciphertext` is a VAULT blob of
// UTF-8 JSON bound to the row; `owner_wrap` and `self_wrap` carry the key; `grantee_wraps`
// optionally carry it to connections whose selectors reach the memory.
import { webcrypto } from 'node:crypto';
import { randomBytes, kid } from './keys.mjs';
import { sealVault, openVault } from './vault.mjs';
import { wrapToAgent, wrapToOwner, unwrapAsAgent, unwrapAsOwner } from './envelope.mjs';
import { b64decode, b64encode, utf8 } from './b64.mjs';
import { MemoryModelError, UnreadableRow } from './errors.mjs';

export const CATEGORIES = ['personal_details', 'family', 'professional_details', 'sports', 'travel', 'food',
  'music', 'health', 'technology', 'hobbies', 'fashion', 'entertainment', 'milestones', 'user_preferences', 'misc'];
export const ENTITY_TYPES = ['device', 'document', 'event', 'goal', 'hobby', 'media', 'organization', 'person',
  'pet', 'place', 'product', 'project', 'team', 'trip', ''];
const USER_NAMES = ['default_user', 'you', 'user', 'me'];

const bareTopicId = (id) => (String(id).startsWith('topic:') ? String(id).slice(6) : String(id));

/** The read reasons a grantee's selectors give it on a row whose labels are `labels`. */
export function viaFor(selectors, { categories = [], about = [], endpoints = null }) {
  const s = selectors || {};
  if (s.all) return ['all'];
  const topics = new Set((s.topics || []).map((t) => `topic:${bareTopicId(t)}`));
  const reachEnd = (end) => {
    if (end.startsWith('topic:')) return topics.has(end) ? end : null;
    if (end.startsWith('account:')) {
      const id = end.slice(8);
      return s.account_wildcard || (s.account_ids || []).includes(id) ? end : null;
    }
    return null;
  };
  if (endpoints) { // a relation needs every non-user end
    const ends = endpoints.filter((e) => e !== 'user');
    const reasons = ends.map(reachEnd);
    if (!ends.length || reasons.some((r) => r === null)) return [];
    return [reasons.length === 1 ? reasons[0] : `and:${reasons.join('+')}`];
  }
  const via = [];
  for (const c of categories) if ((s.categories || []).includes(c)) via.push(`category:${c}`);
  for (const a of about) { const r = reachEnd(a); if (r) via.push(r); }
  return via;
}

async function sealRow(plaintext, keys, labels) {
  if (!keys?.ownerPublicKey) throw new MemoryModelError('ownerPublicKey is null: the owner has not finished key setup');
  if (!keys?.agentPublicKey) throw new MemoryModelError('agentPublicKey is required for self_wrap');
  const key = randomBytes(32);
  const row = {
    id: plaintext.row_id,
    kid: await kid(key),
    ciphertext: b64encode(await sealVault(key, utf8.encode(JSON.stringify(plaintext)))),
    owner_wrap: b64encode(await wrapToOwner(key, keys.ownerPublicKey)),
    self_wrap: b64encode(await wrapToAgent(key, keys.agentPublicKey)),
  };
  const granteeWraps = [];
  for (const g of keys.grantees || []) {
    const via = viaFor(g.selectors, labels);
    if (via.length) granteeWraps.push({ token_id: g.token_id, via, wrapped_key: b64encode(await wrapToAgent(key, g.public_key)) });
  }
  if (granteeWraps.length) row.grantee_wraps = granteeWraps;
  return row;
}

/** newMemoryRow({text, topic?, categories?, account?, metadata?}, keys) → a POST-ready row. */
export async function newMemoryRow({ text, topic = null, categories = [], account = null, metadata = null }, keys) {
  if (typeof text !== 'string' || !text.trim()) throw new MemoryModelError('text must be a non-empty string');
  if (topic && account) throw new MemoryModelError('exactly one about: a topic or an account, not both');
  if (metadata && typeof metadata === 'object') {
    for (const k of ['topic', 'topics', 'topic_name']) {
      if (k in metadata) throw new MemoryModelError(`metadata.${k} files nothing; pass the topic argument instead`);
    }
  }
  const cats = [...new Set(categories)];
  for (const c of cats) if (!CATEGORIES.includes(c)) throw new MemoryModelError(`unknown category ${c}`);
  const rowId = webcrypto.randomUUID();
  let observation; let about;
  if (topic) {
    observation = { entityName: topic.name, content: text };
    about = [`topic:${bareTopicId(topic.id)}`];
  } else if (account) {
    observation = { content: text }; // never the account's name
    about = [`account:${account}`];
  } else {
    observation = { entityName: 'default_user', content: text };
    about = ['user'];
  }
  const plaintext = { v: 2, row_id: rowId, observation, about };
  if (cats.length) plaintext.categories = cats;
  if (metadata) plaintext.metadata = metadata;
  return sealRow(plaintext, keys, { categories: cats, about });
}

/** newTopicRows({name, type?, link?: {relationType?, topic?}}, keys) → {topicId, rows: [entity, relation]}. */
export async function newTopicRows({ name, type = '', link = {} }, keys) {
  if (typeof name !== 'string' || !name.trim()) throw new MemoryModelError('a topic needs a name');
  if (name.length > 200) throw new MemoryModelError('a topic name is at most 200 characters');
  if (USER_NAMES.includes(name.trim().toLowerCase())) throw new MemoryModelError('the user is never a topic name');
  if (!ENTITY_TYPES.includes(type)) throw new MemoryModelError(`unknown entity type ${type}`);
  const parent = link?.topic || null;
  const relationType = link?.relationType ?? (parent ? 'includes' : 'is interested in');
  if (relationType.length > 100) throw new MemoryModelError('relationType is at most 100 characters');
  const entityId = webcrypto.randomUUID();
  const relationId = webcrypto.randomUUID();
  const entity = { v: 2, row_id: entityId, entity: { name, entityType: type }, about: [] };
  const endpoints = [parent ? `topic:${bareTopicId(parent.id)}` : 'user', `topic:${entityId}`];
  const relation = {
    v: 2, row_id: relationId,
    relation: { from: parent ? parent.name : 'default_user', to: name, relationType },
    endpoints, about: [],
  };
  const rows = [
    await sealRow(entity, keys, { about: [`topic:${entityId}`] }),
    await sealRow(relation, keys, { endpoints }),
  ];
  return { topicId: entityId, rows };
}

function unreadable(row, reason) {
  return new UnreadableRow(row?.id ?? null, reason);
}

/** Open a row's ciphertext with its raw key: kid check, AES-GCM, UTF-8 JSON, v and row_id binding. */
export async function openRowWithKey(row, key) {
  if ((await kid(key)) !== row.kid) throw unreadable(row, `kid ${row.kid} does not match the unwrapped key`);
  let obj;
  try {
    obj = JSON.parse(utf8.decode(await openVault(key, b64decode(row.ciphertext, 'ciphertext'))));
  } catch (err) {
    throw unreadable(row, `ciphertext does not open: ${err.message}`);
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw unreadable(row, 'plaintext is not an object');
  if (obj.v !== 2) throw unreadable(row, `v is ${JSON.stringify(obj.v)}, not 2`);
  if (obj.row_id !== row.id) throw unreadable(row, `row_id ${obj.row_id} is not the served id`);
  return obj;
}

const isStrArray = (x) => Array.isArray(x) && x.every((s) => typeof s === 'string');

/** Read a served row ({id, kid, ciphertext, wrapped_key, …}): a memory, null for a graph row, or throws UnreadableRow. */
export async function readMemoryRow(row, privateKey) {
  let key;
  try {
    key = await unwrapAsAgent(b64decode(row.wrapped_key, 'wrapped_key'), privateKey);
  } catch (err) {
    throw unreadable(row, `wrapped_key does not open with this key: ${err.message}`);
  }
  const obj = await openRowWithKey(row, key);
  if ('entity' in obj || 'relation' in obj) return null;
  const o = obj.observation;
  if (!o || typeof o !== 'object' || typeof o.content !== 'string') throw unreadable(row, 'observation.content is not a string');
  if ('entityName' in o && typeof o.entityName !== 'string') throw unreadable(row, 'observation.entityName is not a string');
  if (!isStrArray(obj.about) || obj.about.length !== 1) throw unreadable(row, 'about is not one string');
  if ('categories' in obj && !isStrArray(obj.categories)) throw unreadable(row, 'categories is not a list of strings');
  if ('metadata' in obj && (obj.metadata === null || typeof obj.metadata !== 'object' || Array.isArray(obj.metadata))) {
    throw unreadable(row, 'metadata is not an object');
  }
  const about = obj.about[0];
  return {
    id: row.id, text: o.content, about: obj.about, entityName: o.entityName ?? null,
    topic: about.startsWith('topic:') ? { id: about.slice(6), name: o.entityName ?? null } : null,
    account: about.startsWith('account:') ? about.slice(8) : null,
    categories: obj.categories ?? [], metadata: obj.metadata ?? {}, kid: row.kid,
    rev: row.rev ?? null, via: row.via ?? null, mine: row.mine ?? null,
  };
}

/** What the owner's app sees: open owner_wrap (base64 text of the key), then the ciphertext. */
export async function openRowAsOwner(row, ownerPrivateKey) {
  let key;
  try {
    key = await unwrapAsOwner(b64decode(row.owner_wrap, 'owner_wrap'), ownerPrivateKey);
  } catch (err) {
    throw unreadable(row, `owner_wrap does not open: ${err.message}`);
  }
  return openRowWithKey(row, key);
}

// Legacy spaces: "The plaintext embeds space_id and row_id; check both after decrypting".
export async function sealSpaceRow(spaceKey, plaintext, { spaceId, rowId }) {
  const body = { space_id: spaceId, row_id: rowId, ...plaintext };
  body.space_id = spaceId; body.row_id = rowId;
  return sealVault(spaceKey, utf8.encode(JSON.stringify(body)));
}

export async function openSpaceRow(blob, spaceKey, { spaceId, rowId }) {
  const obj = JSON.parse(utf8.decode(await openVault(spaceKey, blob)));
  if (obj.space_id !== spaceId) throw new UnreadableRow(rowId, `space_id ${obj.space_id} is not ${spaceId}`);
  if (obj.row_id !== rowId) throw new UnreadableRow(rowId, `row_id ${obj.row_id} is not ${rowId}`);
  return obj;
}
