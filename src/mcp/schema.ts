import { z } from 'zod';

type Json = { [k: string]: unknown };

const SAFE_INT = Number.MAX_SAFE_INTEGER;

/**
 * A tool's input schema as a model should read it: the JSON Schema of the same zod schema the
 * call is validated with, less what only costs tokens. A property's `null` alternative is dropped
 * (leaving the field out means the same); a `null` inside an array stays (a missing value in a
 * series has no other spelling). Also dropped: aliases and compatibility-only fields (still accepted, not
 * advertised), ±2^53 bounds, key-name constraints and `$schema`.
 */
export function leanToolSchema(schema: z.ZodObject): Json {
  const raw = z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'any' }) as Json;
  delete raw.$schema;
  return lean(raw) as Json;
}

const HIDDEN = /^(Alias of |Accepted for compatibility)/;

/** `dropNull`: the node is an object property's value (or an alternative of one), where null means absent. */
function lean(node: unknown, dropNull = false): unknown {
  if (Array.isArray(node)) return node.map((x) => lean(x, dropNull));
  if (!node || typeof node !== 'object') return node;
  let n = { ...(node as Json) };
  const anyOf = n.anyOf as Json[] | undefined;
  if (dropNull && Array.isArray(anyOf)) {
    const rest = anyOf.filter((a) => a.type !== 'null');
    if (rest.length === 1) {
      const { anyOf: _drop, ...outer } = n;
      n = { ...(rest[0] as Json), ...outer };
    } else n.anyOf = rest;
  }
  if (dropNull && Array.isArray(n.type)) {
    const types = (n.type as string[]).filter((t) => t !== 'null');
    n.type = types.length === 1 ? types[0] : types;
  }
  if (n.maximum === SAFE_INT) delete n.maximum;
  if (n.minimum === -SAFE_INT) delete n.minimum;
  delete n.propertyNames;
  if (n.additionalProperties && typeof n.additionalProperties === 'object' && Object.keys(n.additionalProperties as Json).length === 0) {
    delete n.additionalProperties;
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(n)) {
    if (k === 'properties' && v && typeof v === 'object') {
      const props: Json = {};
      for (const [name, p] of Object.entries(v as Json)) {
        const d = (p as Json | null)?.description;
        if (typeof d === 'string' && HIDDEN.test(d)) continue;
        props[name] = lean(p, true);
      }
      out[k] = props;
    } else out[k] = lean(v, k === 'anyOf' && dropNull);
  }
  // anyOf [{type: number}, {type: null}] says the same as type: [number, null], in fewer tokens.
  const alts = out.anyOf as Json[] | undefined;
  if (Array.isArray(alts) && out.type === undefined && alts.every((a) => Object.keys(a).length === 1 && typeof a.type === 'string')) {
    const { anyOf: _alts, ...rest } = out;
    return { type: alts.map((a) => a.type), ...rest };
  }
  return out;
}
