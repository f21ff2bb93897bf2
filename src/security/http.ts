// The HTTP side of security, shared by the service and the GPU server: bearer-token
// authentication (and the Caller it makes: who owns what the request makes, what it sees),
// the request id echoed on every answer, per-token rate limits and CORS.
import cors from '@fastify/cors';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { tokenCaller, UNAUTHENTICATED, type Caller } from '../core/caller.ts';
import { rateLimited, unauthorized } from '../core/errors.ts';
import { REQUEST_ID_HEADER } from '../request-context.ts';
import { matchBearer, type ServerSecurity } from './tokens.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Name of the token that authenticated this request; null with authentication off or on open routes. */
    tokenName: string | null;
    /**
     * Who is asking, for every protected route: the token (an admin's sees everything), or
     * UNAUTHENTICATED with authentication off. Null on open routes, which must not use it.
     */
    caller: Caller | null;
  }
}

export interface HttpSecurityOptions {
  security: ServerSecurity;
  /** Routes that need a token (everything else, e.g. /health and the web UI, stays open). */
  isProtected(path: string): boolean;
  /** Token names that see and act on every job and upload (LECTERN_API_ADMINS). */
  admins?: readonly string[];
  /** Requests per minute per token (per IP without authentication) on protected routes; 0 or absent → none. */
  rateLimitPerMinute?: number;
  corsOrigins?: string[];
}

const pathOf = (req: FastifyRequest) => req.url.split('?')[0]!;

export async function installSecurity(app: FastifyInstance, opts: HttpSecurityOptions): Promise<void> {
  const { security } = opts;
  const authOn = security.tokens.length > 0;
  const admins = new Set(opts.admins ?? []);
  app.decorateRequest('tokenName', null);
  app.decorateRequest('caller', null);

  const deny = (req: FastifyRequest, reply: FastifyReply, reason: string) => {
    // The reason, never the header: a wrong token may be a right token for something else.
    req.log.info({ auth: reason, url: pathOf(req) }, 'request refused: authentication');
    reply.header('www-authenticate', 'Bearer');
    throw unauthorized(reason === 'no token' ? 'authentication required: send Authorization: Bearer <token>' : 'invalid bearer token');
  };

  app.addHook('onRequest', async (req, reply) => {
    reply.header(REQUEST_ID_HEADER, req.id);
    if (req.method === 'OPTIONS') return; // CORS preflights carry no credentials
    const p = pathOf(req);
    if (p === '/metrics') {
      if (security.metricsToken) {
        if (!matchBearer(req.headers.authorization, [security.metricsToken])) return deny(req, reply, req.headers.authorization ? 'wrong token' : 'no token');
      } else if (authOn && !security.loopback) {
        const name = matchBearer(req.headers.authorization, security.tokens);
        if (!name) return deny(req, reply, req.headers.authorization ? 'wrong token' : 'no token');
      }
      return;
    }
    if (!opts.isProtected(p)) return;
    if (!authOn) {
      req.caller = UNAUTHENTICATED;
      return;
    }
    const name = matchBearer(req.headers.authorization, security.tokens);
    if (!name) return deny(req, reply, req.headers.authorization ? 'wrong token' : 'no token');
    req.tokenName = name;
    req.caller = tokenCaller(name, admins.has(name));
    // Every later line about this request (the completion log included) names the token's holder.
    req.log = req.log.child({ token_name: name });
    reply.log = req.log;
  });

  if (opts.corsOrigins && opts.corsOrigins.length > 0) {
    const any = opts.corsOrigins.includes('*');
    await app.register(cors, {
      origin: any ? true : opts.corsOrigins,
      methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['authorization', 'content-type', 'range', REQUEST_ID_HEADER],
      exposedHeaders: [REQUEST_ID_HEADER, 'content-disposition', 'content-range', 'retry-after', 'x-preview-text', 'x-audio-duration'],
      maxAge: 600,
    });
  }

  const perMinute = opts.rateLimitPerMinute ?? 0;
  if (perMinute > 0) {
    await app.register(rateLimit, {
      global: true,
      max: perMinute,
      timeWindow: 60_000,
      // Counted per process: with several API processes, each allows this many.
      keyGenerator: (req) => (req.tokenName ? `token:${req.tokenName}` : `ip:${req.ip}`),
      allowList: (req) => req.method === 'OPTIONS' || !opts.isProtected(pathOf(req)),
      errorResponseBuilder: (req, ctx) => {
        req.log.warn({ limit: ctx.max, key: req.tokenName ?? 'ip' }, 'rate limit exceeded');
        return rateLimited(`rate limit exceeded: at most ${ctx.max} requests per minute${req.tokenName ? ` for token "${req.tokenName}"` : ''}; retry in ${ctx.after}`);
      },
    });
  }
}

/** The request's Caller; only protected routes have one (a route outside them asking is a bug, answered 500). */
export function callerOf(req: FastifyRequest): Caller {
  if (!req.caller) throw new Error(`no caller for ${req.method} ${pathOf(req)}: the route is not a protected one`);
  return req.caller;
}
