// Serves the built web app (web/dist) at `/`: files by path, and index.html for the
// app's client-side routes. The API's own paths never fall through to the app.
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, notFound, notReady } from '../core/errors.ts';

/** Where `npm --prefix web run build` writes the app. */
export const DEFAULT_WEB_DIR = path.resolve(import.meta.dirname, '..', '..', 'web', 'dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

// The app talks only to this origin; media it plays are blob: URLs made from fetched bytes,
// or, with an S3 store in redirect mode, presigned URLs of the store (its origin is added).
function contentSecurityPolicy(mediaOrigins: string[]): string {
  const media = ["'self'", 'blob:', ...mediaOrigins].join(' ');
  return `default-src 'self'; img-src 'self' blob: data:; media-src ${media}; style-src 'self' 'unsafe-inline'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'`;
}

function isApiPath(url: string): boolean {
  return url === '/api' || url.startsWith('/api/') || url === '/openapi.json' || url === '/health';
}

export async function webAppRoutes(app: FastifyInstance, opts: { dir?: string; mediaOrigins?: string[] } = {}): Promise<void> {
  const root = path.resolve(opts.dir ?? DEFAULT_WEB_DIR);
  const CSP = contentSecurityPolicy(opts.mediaOrigins ?? []);

  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    const urlPath = decodeURIComponentSafe(req.url.split('?')[0]!);
    if (urlPath === null) throw badRequest('malformed URL');
    if (isApiPath(urlPath)) throw notFound(`no route for ${req.method} ${urlPath}`);
    const index = path.join(root, 'index.html');
    if (!fs.existsSync(index)) {
      throw notReady(`the web app is not built (${path.relative(process.cwd(), root) || root} is missing); run \`npm run setup\` (or \`npm --prefix web run build\`)`);
    }
    let file = path.resolve(root, '.' + urlPath);
    if (file !== root && !file.startsWith(root + path.sep)) throw notFound('not found');
    const stat = await fs.promises.stat(file).catch(() => null);
    if (!stat?.isFile()) {
      // A missing asset is a 404; any other path is one of the app's routes.
      if (path.extname(urlPath) !== '') throw notFound(`no file ${urlPath}`);
      file = index;
    }
    const ext = path.extname(file).toLowerCase();
    reply
      .header('content-type', TYPES[ext] ?? 'application/octet-stream')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      // Vite names built assets by content hash: they never change; index.html always may.
      .header('cache-control', urlPath.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (ext === '.html') reply.header('content-security-policy', CSP).header('x-frame-options', 'DENY');
    return reply.send(fs.createReadStream(file));
  };
  app.get('/', { schema: { hide: true } }, serve);
  app.get('/*', { schema: { hide: true } }, serve);
}

function decodeURIComponentSafe(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}
