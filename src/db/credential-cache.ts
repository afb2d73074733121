import type {
  KyselyPlugin,
  OperationNode,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryId,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import pg from 'pg';

/**
 * The API-key lookup cache of a PostgreSQL deployment (ADR 0025). On PostgreSQL the lookup is a
 * network round trip on every API-key request; the rows it reads (the key, its account, the
 * account's billing flag) change rarely. So the rows are kept in memory, and any change to them is
 * an invalidation from two sides:
 * - **the database**: triggers on `api_keys`, `users` and `billing_accounts.billing_active`
 *   (migration 0008) send `NOTIFY tsfm_credentials, '<user id>'` when the change commits, to
 *   every replica listening; that covers other processes, an operator's SQL, and this one;
 * - **this process**: a Kysely plugin drops everything when a statement of this process writes
 *   those tables, before and after the statement runs, so a revoke answered here is seen by the
 *   next request here without waiting for the notification.
 * Entries are used only while the listening connection is up (`live`): a lost connection clears
 * the cache and turns it off until LISTEN is back. A lookup that was in flight across any
 * invalidation is not stored (the generation it started under is gone). Entries also expire after
 * `ttlMs` (CREDENTIAL_CACHE_SECONDS) whatever happens. What is cached is the row: every check the
 * lookup makes (revoked, expired, the digest compared in constant time, scopes) still runs on it
 * per request.
 */
export const CREDENTIAL_CHANNEL = 'tsfm_credentials';

interface Entry<V> {
  value: V;
  userId: string;
  at: number;
}

export class CredentialCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private generation = 0;
  private live = false;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(ttlMs: number, opts: { maxEntries?: number; clock?: () => number } = {}) {
    this.ttlMs = ttlMs;
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.clock = opts.clock ?? (() => performance.now());
  }

  /** Whether entries are served: the invalidation feed is up and a lifetime is set. */
  get enabled(): boolean {
    return this.live && this.ttlMs > 0;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Taken before a lookup; `set` stores its row only if no invalidation happened since. */
  snapshot(): number {
    return this.generation;
  }

  get(key: string): V | undefined {
    if (!this.enabled) return undefined;
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (this.clock() - e.at >= this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, userId: string, value: V, snapshot: number): void {
    if (!this.enabled || snapshot !== this.generation) return;
    if (!this.entries.has(key) && this.entries.size >= this.maxEntries) {
      // The oldest insertion goes (a Map iterates in insertion order).
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, userId, at: this.clock() });
  }

  /** A row of this account changed (a notification's payload). */
  invalidateUser(userId: string): void {
    this.generation += 1;
    for (const [k, e] of this.entries) if (e.userId === userId) this.entries.delete(k);
  }

  invalidateAll(): void {
    this.generation += 1;
    this.entries.clear();
  }

  /** The listening connection came up (true) or went away (false); either way nothing cached survives. */
  setLive(live: boolean): void {
    this.live = live;
    this.invalidateAll();
  }
}

const WATCHED_TABLES = new Set(['users', 'api_keys', 'billing_accounts']);

function tableName(node: OperationNode | undefined): string | null {
  if (!node) return null;
  const n = node as { kind: string; table?: { identifier?: { name?: string } }; node?: OperationNode };
  if (n.kind === 'TableNode') return n.table?.identifier?.name ?? null;
  if (n.kind === 'AliasNode') return tableName(n.node);
  return null;
}

/** Column names an UPDATE sets (a raw or unusual column node reads as null: treated as "anything"). */
function updatedColumns(updates: readonly OperationNode[] | undefined): (string | null)[] {
  return (updates ?? []).map((u) => {
    const c = (u as { column?: { kind?: string; column?: { name?: string } } }).column;
    return c?.kind === 'ColumnNode' ? (c.column?.name ?? null) : null;
  });
}

/**
 * Whether a statement may change what the API-key lookup reads. Writes of `last_used_at` alone
 * (once a minute per key, by the lookup itself) and of `billing_accounts` columns other than
 * `billing_active` (the balance, on every charge) do not.
 */
export function writesCredentialRows(node: RootOperationNode): boolean {
  const n = node as unknown as {
    kind: string;
    table?: OperationNode;
    into?: OperationNode;
    from?: { froms?: OperationNode[] };
    updates?: OperationNode[];
  };
  if (n.kind === 'UpdateQueryNode') {
    const t = tableName(n.table);
    if (t === null || !WATCHED_TABLES.has(t)) return false;
    const cols = updatedColumns(n.updates);
    if (t === 'api_keys') return cols.length === 0 || cols.some((c) => c !== 'last_used_at');
    if (t === 'billing_accounts') return cols.length === 0 || cols.some((c) => c === null || c === 'billing_active');
    return true;
  }
  if (n.kind === 'DeleteQueryNode') return (n.from?.froms ?? []).some((f) => WATCHED_TABLES.has(tableName(f) ?? ''));
  // A new billing account changes the lookup's left join; new keys and users are not cached yet.
  if (n.kind === 'InsertQueryNode') return tableName(n.into) === 'billing_accounts';
  return false;
}

/** Drops the cache around every statement of this process that writes the lookup's rows. */
export class CredentialWritePlugin implements KyselyPlugin {
  private readonly writes = new WeakSet<QueryId>();
  private readonly cache: CredentialCache<unknown>;

  constructor(cache: CredentialCache<unknown>) {
    this.cache = cache;
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (writesCredentialRows(args.node)) {
      this.writes.add(args.queryId);
      this.cache.invalidateAll();
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.writes.has(args.queryId)) this.cache.invalidateAll();
    return args.result;
  }
}

/**
 * Keeps a connection LISTENing on CREDENTIAL_CHANNEL, feeding `cache`; reconnects after a loss
 * (the cache is off meanwhile). Returns its stop function.
 */
export function listenForCredentialChanges(
  connection: pg.ClientConfig,
  cache: CredentialCache<unknown>,
  opts: { retryMs?: number } = {},
): { ready: Promise<void>; stop(): Promise<void> } {
  const retryMs = opts.retryMs ?? 1000;
  let stopped = false;
  let client: pg.Client | null = null;
  let timer: NodeJS.Timeout | null = null;
  let firstAttempt: (() => void) | null = null;
  const ready = new Promise<void>((resolve) => {
    firstAttempt = resolve;
  });
  const settleFirst = () => {
    firstAttempt?.();
    firstAttempt = null;
  };
  const lost = (c: pg.Client) => {
    if (client !== c) return;
    client = null;
    cache.setLive(false);
    c.end().catch(() => undefined);
    if (!stopped) {
      timer = setTimeout(connect, retryMs);
      timer.unref();
    }
  };
  const connect = () => {
    timer = null;
    if (stopped) return;
    const c = new pg.Client(connection);
    client = c;
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
    c.on('notification', (msg) => {
      if (msg.channel !== CREDENTIAL_CHANNEL) return;
      if (msg.payload) cache.invalidateUser(msg.payload);
      else cache.invalidateAll();
    });
    c.connect()
      .then(() => c.query(`listen ${CREDENTIAL_CHANNEL}`))
      .then(() => {
        if (client === c && !stopped) cache.setLive(true);
        settleFirst();
      })
      .catch(() => {
        settleFirst();
        lost(c);
      });
  };
  connect();
  return {
    ready,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      cache.setLive(false);
      settleFirst();
      await c?.end().catch(() => undefined);
    },
  };
}
