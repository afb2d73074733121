import { z } from 'zod';

type Json = { [k: string]: unknown };

const SAFE_INT = Number.MAX_SAFE_INTEGER;

/**
 * A tool's input schema as a model should read it: the JSON Schema of the same zod schema the
 * call is validated with, less what only costs tokens. `null` alternatives are dropped (leaving a
 * field out means the same), as are aliases and compatibility-only fields (still accepted, not
 * advertised), ±2^53 bounds, key-name constraints and `$schema`.
 */
export function leanToolSchema(schema: z.ZodObject): Json {
  const raw = z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'any' }) as Json;
  delete raw.$schema;
  return lean(raw) as Json;
}

const HIDDEN = /^(Alias of |Accepted for compatibility)/;

function lean(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(lean);
  if (!node || typeof node !== 'object') return node;
  let n = { ...(node as Json) };
  const anyOf = n.anyOf as Json[] | undefined;
  if (Array.isArray(anyOf)) {
    const rest = anyOf.filter((a) => a.type !== 'null');
    if (rest.length === 1) {
      const { anyOf: _drop, ...outer } = n;
      n = { ...(rest[0] as Json), ...outer };
    } else n.anyOf = rest;
  }
  if (Array.isArray(n.type)) {
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
        props[name] = lean(p);
      }
      out[k] = props;
    } else out[k] = lean(v);
  }
  return out;
}
