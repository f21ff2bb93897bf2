// Fastify plumbing shared by the service API and the GPU server: JSON errors,
// OpenAPI generation, and file responses with HTTP Range.
import fs from 'node:fs';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import { HttpError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { requestIdFrom } from '../request-context.ts';
import { ErrorBody } from './schemas.ts';

export interface HttpAppOptions {
  log: Logger;
  title: string;
  description: string;
  bodyLimit?: number;
}

export async function createHttpApp(opts: HttpAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.log,
    disableRequestLogging: false,
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    // Unknown fields are an error (422), not silently dropped; query strings are coerced.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
    // x-request-id is taken only when it is a valid id (see request-context.ts), else made here.
    requestIdHeader: false,
    genReqId: (req) => requestIdFrom(req.headers),
  }) as unknown as FastifyInstance;

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: opts.title, description: opts.description, version: '0.1.0' },
    },
    // Shared schemas appear in components under their own names (Error, JobResponse…).
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  app.addSchema(ErrorBody);

  app.setErrorHandler((err: FastifyError | HttpError, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof HttpError) return reply.code(err.statusCode).send({ detail: err.detail });
    const fe = err as FastifyError;
    if (fe.validation) {
      const v = fe.validation[0];
      const where = `${fe.validationContext ?? 'request'}${v?.instancePath ?? ''}`;
      const extra = v?.params && 'additionalProperty' in v.params ? ` "${String(v.params.additionalProperty)}"` : '';
      return reply.code(422).send({ detail: `${where} ${v?.message ?? 'is invalid'}${extra}` });
    }
    const status = fe.statusCode ?? 500;
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.code(413).send({ detail: `request body is larger than the limit of ${app.initialConfig.bodyLimit} bytes` });
    }
    if (status >= 400 && status < 500) {
      return reply.code(status === 406 ? 415 : status).send({ detail: fe.message.split('\n')[0] });
    }
    req.log.error({ err }, 'request failed');
    return reply.code(status >= 500 && status < 600 ? status : 500).send({ detail: 'internal error' });
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send({ detail: `no route for ${req.method} ${req.url.split('?')[0]}` }));

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}

/** Only media a browser plays without running anything may be shown inline; everything else is a download. */
const INLINE_SAFE = /^(audio|video)\/[a-z0-9.+-]+$/i;

/**
 * Sends a file as a download, honouring a single `Range: bytes=a-b`. The content type is
 * what the service knows the file to be; `nosniff` stops browsers from guessing otherwise.
 * `inline` is honoured for audio and video only: HTML, SVG or text is never rendered in
 * the service's origin.
 */
export async function sendFile(req: FastifyRequest, reply: FastifyReply, file: string, contentType: string, filename: string, inline = false): Promise<FastifyReply> {
  inline = inline && INLINE_SAFE.test(contentType.split(';')[0]!.trim());
  const stat = await fs.promises.stat(file);
  const size = stat.size;
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  reply
    .header('content-type', contentType)
    .header('accept-ranges', 'bytes')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .header('content-disposition', `${inline ? 'inline' : 'attachment'}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`)
    .header('last-modified', stat.mtime.toUTCString());
  const range = req.headers.range;
  if (range) {
    const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
    let start = m && m[1] !== '' ? Number(m[1]) : NaN;
    let end = m && m[2] !== '' ? Number(m[2]) : NaN;
    if (m && m[1] === '' && m[2] !== '') {
      start = Math.max(0, size - Number(m[2]));
      end = size - 1;
    } else if (m && Number.isNaN(end)) end = size - 1;
    if (!m || Number.isNaN(start) || start > end || start >= size) {
      reply.header('content-type', 'application/json; charset=utf-8').removeHeader('content-disposition');
      return reply.code(416).header('content-range', `bytes */${size}`).send({ detail: `range ${range} is not satisfiable for ${size} bytes` });
    }
    end = Math.min(end, size - 1);
    reply.code(206).header('content-range', `bytes ${start}-${end}/${size}`).header('content-length', end - start + 1);
    return reply.send(fs.createReadStream(file, { start, end }));
  }
  reply.header('content-length', size);
  return reply.send(fs.createReadStream(file));
}
