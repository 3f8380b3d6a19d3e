// Typed errors of the independent implementation, so the Python side can tell a format
// refusal (field + offset) from a cryptographic one (step) and a row that does not read.

export class WireFormatError extends Error {
  constructor(message, { field = null, offset = null, kind = null } = {}) {
    super(message);
    this.name = 'WireFormatError';
    this.field = field;
    this.offset = offset;
    this.kind = kind;
  }
}

export class CryptoError extends Error {
  constructor(message, { step = null } = {}) {
    super(message);
    this.name = 'CryptoError';
    this.step = step;
  }
}

export class UnreadableRow extends Error {
  constructor(rowId, reason) {
    super(`row ${rowId}: ${reason}`);
    this.name = 'UnreadableRow';
    this.rowId = rowId;
    this.reason = reason;
  }
}

export class MemoryModelError extends Error {
  constructor(message) {
    super(message);
    this.name = 'MemoryModelError';
  }
}

/** A plain-JSON description of any error, for the CLI's answer. */
export function describeError(err) {
  const out = { name: err?.name ?? 'Error', message: String(err?.message ?? err) };
  for (const k of ['field', 'offset', 'kind', 'step', 'rowId', 'reason']) {
    if (err && err[k] !== undefined && err[k] !== null) out[k] = err[k];
  }
  return out;
}
