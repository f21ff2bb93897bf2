// Bearer tokens: parsed from configuration (`name:token` lists), kept only as SHA-256
// hashes, and compared in constant time. The plain token never leaves this module.
import { createHash, timingSafeEqual } from 'node:crypto';

export interface TokenEntry {
  /** What logs, rate limits and job ownership call the holder of this token. */
  name: string;
  /** SHA-256 of the token. */
  hash: Buffer;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** Shortest token accepted: a guessable token is no protection on a network. */
export const MIN_TOKEN_LENGTH = 16;

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * Parses `name:token` entries (comma- or newline-separated; `#` starts a comment line).
 * `where` names the source in errors; an error never quotes a token.
 */
export function parseTokens(text: string, where: string): TokenEntry[] {
  const out: TokenEntry[] = [];
  const entries = text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter((s) => s && !s.startsWith('#'));
  for (const [i, entry] of entries.entries()) {
    const colon = entry.indexOf(':');
    if (colon <= 0) throw new Error(`${where}: entry ${i + 1} is not "name:token"`);
    const name = entry.slice(0, colon).trim();
    const token = entry.slice(colon + 1).trim();
    if (!NAME_RE.test(name)) throw new Error(`${where}: token name "${name.slice(0, 64)}" must match ${NAME_RE.source}`);
    if (token.length < MIN_TOKEN_LENGTH) throw new Error(`${where}: the token named "${name}" is shorter than ${MIN_TOKEN_LENGTH} characters`);
    if (/\s/.test(token)) throw new Error(`${where}: the token named "${name}" contains whitespace`);
    if (out.some((t) => t.name === name)) throw new Error(`${where}: the token name "${name}" appears twice`);
    out.push({ name, hash: sha256(token) });
  }
  return out;
}

/** A single token (e.g. the metrics token) as an entry. */
export function tokenEntry(name: string, token: string): TokenEntry {
  return { name, hash: sha256(token) };
}

/**
 * The name of the token in an `Authorization: Bearer …` header, or null. Every configured
 * hash is compared (no early exit), so the time taken does not say which entry was close.
 */
export function matchBearer(header: string | undefined, tokens: readonly TokenEntry[]): string | null {
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!m) return null;
  const presented = sha256(m[1]!);
  let found: string | null = null;
  for (const t of tokens) {
    if (timingSafeEqual(presented, t.hash) && found === null) found = t.name;
  }
  return found;
}

/** Whether a listen address only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}

/** Who may call a server, and how much. */
export interface ServerSecurity {
  /** Hashed bearer tokens; empty → authentication off (allowed on loopback, or with --insecure). */
  tokens: TokenEntry[];
  /** `--insecure`: listening beyond loopback without tokens was asked for explicitly. */
  insecure: boolean;
  /** Guards /metrics alone (LECTERN_METRICS_TOKEN); null → open on loopback, else the API tokens. */
  metricsToken: TokenEntry | null;
  /** Whether the listen address is loopback only. */
  loopback: boolean;
}

export interface ServiceSecurity extends ServerSecurity {
  /** Token names that see and act on every job and upload (LECTERN_API_ADMINS); every other token sees its own. */
  admins: string[];
  /** Origins allowed by CORS; empty → no CORS headers at all. */
  corsOrigins: string[];
  /** Requests per minute per token (per IP with authentication off) on /api/*; 0 → no limit. */
  rateLimitPerMinute: number;
  /** Pending + running jobs one token may have; 0 → no limit. */
  maxActiveJobsPerToken: number;
  /** Largest JSON request body in bytes. */
  maxBodyBytes: number;
}
