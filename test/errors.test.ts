// The one error model: catalogue codes and statuses, errors across a thread boundary by
// code, and the shared error handler on a real Fastify app (createHttpApp, ephemeral port),
// including a plugin that answers its errors in its own body shape.
import fs from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Type } from '@sinclair/typebox';
import { errorHandler, createHttpApp } from '../src/http/server.ts';
import { ERRORS, fromWire, LecternError, notFound, toWire } from '../src/core/errors.ts';
import { ConfigError } from '../src/config.ts';
import { DocumentError } from '../src/documents/model.ts';
import { GpuServerError, LipsyncCancelled } from '../src/gpu-client/errors.ts';
import { createLogger } from '../src/log.ts';
import { ToolMissingError } from '../src/media/ffmpeg.ts';
import { MissingModelError, SpeechInputError } from '../src/speech/types.ts';

describe('error catalogue', () => {
  it('every error class carries a catalogue code and answers with its status', () => {
    const cases: Array<[LecternError, string, number]> = [
      [new SpeechInputError('no such language'), 'SPEECH_INPUT', 422],
      [new MissingModelError('model.onnx is missing'), 'MISSING_MODEL', 503],
      [new ToolMissingError('ffmpeg not found'), 'TOOL_MISSING', 503],
      [new DocumentError('not a PDF'), 'DOCUMENT_UNREADABLE', 422],
      [new ConfigError('bad flag'), 'CONFIG', 500],
      [new GpuServerError('http://gpu', 'POST /align', 415, 'not audio'), 'UPSTREAM_FAILED', 502],
      [new LipsyncCancelled('http://gpu', 'GET /lipsync/x', 'x'), 'CANCELLED', 409],
    ];
    for (const [err, code, status] of cases) {
      expect(err).toBeInstanceOf(LecternError);
      expect(err.code, err.name).toBe(code);
      expect(err.statusCode, err.name).toBe(status);
      expect(ERRORS[err.code].status).toBe(status);
    }
  });

  it('crosses a thread boundary by code: the status survives, a plain error stays a plain 500', () => {
    const back = fromWire(structuredClone(toWire(new SpeechInputError('unknown aligner "x"'))));
    expect(back).toBeInstanceOf(LecternError);
    expect(back).toMatchObject({ code: 'SPEECH_INPUT', statusCode: 422, message: 'unknown aligner "x"' });
    const bug = fromWire(structuredClone(toWire(new TypeError('x is undefined'))));
    expect(bug).not.toBeInstanceOf(LecternError);
    expect(bug.message).toBe('x is undefined');
    // A code this side does not know (an older or newer peer) is not trusted.
    expect(fromWire({ code: 'NO_SUCH_CODE' as never, message: 'm' })).not.toBeInstanceOf(LecternError);
  });
});

describe('the shared error handler', () => {
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    app = await createHttpApp({ log: createLogger('silent', 'errors-test'), title: 't', description: 't' });
    app.get('/speech', async () => {
      throw new SpeechInputError('backend x does not speak "zz"');
    });
    app.get('/bug', async () => {
      throw new TypeError("Cannot read properties of undefined (reading 'secret')");
    });
    // a real ENOSPC from the kernel: /dev/full refuses every write
    app.get('/full', async () => {
      await fs.promises.writeFile('/dev/full', 'x');
    });
    app.post('/typed', { schema: { body: Type.Object({ n: Type.Integer({ maximum: 3 }) }, { additionalProperties: false }) } }, async () => ({ ok: true }));
    // A plugin with its own error body, as an OpenAI-compatible /v1 group would have.
    await app.register(
      async (v1) => {
        v1.setErrorHandler(errorHandler((e) => ({ error: { message: e.message, type: e.status < 500 ? 'invalid_request_error' : 'server_error', param: null, code: e.code } })));
        v1.setNotFoundHandler(async (req) => {
          throw notFound(`no route for ${req.method} ${req.url}`);
        });
        v1.get('/audio', async () => {
          throw new MissingModelError('whisper is not installed');
        });
      },
      { prefix: '/v1' },
    );
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => app?.close());

  const get = async (p: string, init?: RequestInit) => {
    const res = await fetch(`${url}${p}`, init);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('answers a LecternError with its status and message, a bug with a bare 500, an unknown route with 404', async () => {
    expect(await get('/speech')).toEqual({ status: 422, body: { detail: 'backend x does not speak "zz"' } });
    const bug = await get('/bug');
    expect(bug).toEqual({ status: 500, body: { detail: 'internal error' } });
    expect(await get('/nowhere')).toEqual({ status: 404, body: { detail: 'no route for GET /nowhere' } });
  });

  it.skipIf(!fs.existsSync('/dev/full'))('answers a full disk (ENOSPC) with 507 saying so, not a bare 500', async () => {
    const full = await get('/full');
    expect(full.status).toBe(507);
    expect(full.body.detail).toMatch(/^no space left on the server's disk for this request/);
  });

  it('answers schema errors with 422, malformed JSON with 400, an oversized body with 413', async () => {
    const post = (body: string) => get('/typed', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const big = await post(JSON.stringify({ n: 1, pad: 'x'.repeat(2 * 1024 * 1024) }));
    expect(big).toEqual({ status: 413, body: { detail: 'request body is larger than the limit of 1048576 bytes' } });
    const over = await post('{"n": 7}');
    expect(over.status).toBe(422);
    expect(over.body.detail).toMatch(/body\/n must be <= 3/);
    expect((await post('{"n": 1, "m": 2}')).body.detail).toMatch(/additional properties "m"/);
    expect((await post('{"n": ')).status).toBe(400);
  });

  it('lets a plugin format its own errors from the same classification', async () => {
    expect(await get('/v1/audio')).toEqual({ status: 503, body: { error: { message: 'whisper is not installed', type: 'server_error', param: null, code: 'MISSING_MODEL' } } });
    expect(await get('/v1/none')).toEqual({ status: 404, body: { error: { message: 'no route for GET /v1/none', type: 'invalid_request_error', param: null, code: 'NOT_FOUND' } } });
    // Routes outside the plugin keep {detail}.
    expect((await get('/speech')).body).toHaveProperty('detail');
  });
});
