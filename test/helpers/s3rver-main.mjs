// Runs s3rver (a filesystem-backed S3 server from npm) on 127.0.0.1 for tests and benches,
// in a process of its own so its work never shares an event loop with the API under test.
// Prints {"port": N} on stdout once it listens. Usage: node s3rver-main.mjs DIR BUCKET [BUCKET…]
// Plain JavaScript: under tsx's loader, koa's require() of an ES module dependency breaks.
//
// s3rver 3.7.1 answers AbortMultipartUpload with 405 and ListMultipartUploads with 501.
// Both are added here over s3rver's own upload folder (<dir>/<bucket>/._S3rver_uploads/<id>/,
// holding `key`, `metadata` and one file per part), so the tests can check that an aborted
// upload leaves no part and that the sweep aborts stale multipart uploads.
import fs from 'node:fs';
import path from 'node:path';
import S3rver from 's3rver';

const [dir, ...buckets] = process.argv.slice(2);
if (!dir || buckets.length === 0) throw new Error('usage: s3rver-main.mjs DIR BUCKET...');

const uploadsDir = (bucket) => path.join(dir, bucket, '._S3rver_uploads');
const xmlEscape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

async function multipartOps(ctx, next) {
  if (process.env.S3RVER_DEBUG) process.stderr.write(`${ctx.method} ${ctx.url}\n`);
  const m = /^\/([^/]+)(?:\/(.*))?$/.exec(ctx.path);
  if (!m) return next();
  const bucket = decodeURIComponent(m[1]);
  if (ctx.method === 'DELETE' && m[2] && ctx.query.uploadId !== undefined) {
    const id = ctx.query.uploadId;
    const d = path.join(uploadsDir(bucket), path.basename(id));
    if (!id || !fs.existsSync(d)) {
      ctx.status = 404;
      ctx.type = 'application/xml';
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`;
      return;
    }
    fs.rmSync(d, { recursive: true, force: true });
    ctx.status = 204;
    ctx.body = null;
    return;
  }
  if (ctx.method === 'GET' && !m[2] && ctx.query.uploads !== undefined) {
    const prefix = ctx.query.prefix ?? '';
    const items = [];
    for (const id of fs.existsSync(uploadsDir(bucket)) ? fs.readdirSync(uploadsDir(bucket)) : []) {
      const d = path.join(uploadsDir(bucket), id);
      const keyFile = path.join(d, 'key');
      if (!fs.existsSync(keyFile)) continue;
      const key = fs.readFileSync(keyFile, 'utf8');
      if (!key.startsWith(prefix)) continue;
      const initiated = fs.statSync(d).mtime.toISOString();
      items.push(`<Upload><Key>${xmlEscape(key)}</Key><UploadId>${id}</UploadId><Initiated>${initiated}</Initiated><StorageClass>STANDARD</StorageClass></Upload>`);
    }
    ctx.status = 200;
    ctx.type = 'application/xml';
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xmlEscape(bucket)}</Bucket><Prefix>${xmlEscape(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>${items.join('')}</ListMultipartUploadsResult>`;
    return;
  }
  return next();
}

const server = new S3rver({ address: '127.0.0.1', port: Number(process.env.S3RVER_PORT ?? 0), silent: true, directory: dir, configureBuckets: buckets.map((name) => ({ name })) });
// Before s3rver's router (the last middleware), after its logging and XML encoding.
server.middleware.splice(server.middleware.length - 1, 0, multipartOps);
const addr = await server.run();
process.stdout.write(`${JSON.stringify({ port: addr.port })}\n`);
process.on('SIGTERM', () => void server.close().finally(() => process.exit(0)));
