// Lip-sync jobs (spec §C): POST /lipsync streams the two files into the job's own directory
// and answers 202 at once; GET /lipsync/{id} polls, /result downloads, /cancel stops,
// DELETE removes. Generation runs in the runtime's job table.
import { createReadStream } from 'node:fs';
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { invalid, unsupportedType } from '../../core/errors.ts';
import { ffprobe } from '../../media/ffmpeg.ts';
import type { GpuRuntime } from '../runtime.ts';
import { checkFields, LipsyncFields } from '../schemas.ts';
import { readMultipart } from '../uploads.ts';

type IdParams = { Params: { id: string } };

/** Both files must be what ffmpeg reads as audio and as video, before a generator is started on them. */
async function probeInputs(audioPath: string, videoPath: string): Promise<void> {
  const [a, v] = await Promise.all([ffprobe(audioPath).catch(() => null), ffprobe(videoPath).catch(() => null)]);
  if (!a || !a.streams.some((s) => s.codec_type === 'audio')) throw unsupportedType('file "audio" is not audio that ffmpeg can decode');
  if (!v || !v.streams.some((s) => s.codec_type === 'video')) throw unsupportedType('file "reference_video" is not a video that ffmpeg can decode');
}

export async function lipsyncRoutes(app: FastifyInstance, { runtime }: { runtime: GpuRuntime }): Promise<void> {
  const { table } = runtime.lipsync;
  await app.register(multipart, { limits: { fileSize: runtime.config.maxUploadBytes, files: 4, fields: 16, fieldSize: 1024 * 1024 } });

  app.post(
    '/lipsync',
    {
      schema: {
        summary: 'Start a lip-sync job',
        description: 'multipart/form-data: files "audio" and "reference_video", fields "provider" and "lipsync_preset" (optional). 202 with {lipsync_id, status}; poll GET /lipsync/{id}.',
        consumes: ['multipart/form-data'],
      },
      onRequest: runtime.acceptingWork,
    },
    async (req, reply) => {
      runtime.requireBackend();
      const defaultProvider = runtime.lipsync.provider(); // 503 when none is installed, before reading the upload
      const { id, dir } = table.allocate();
      try {
        const form = await readMultipart(req, runtime.config.maxUploadBytes, { dir, fields: ['audio', 'reference_video'] });
        const audioPath = form.paths.audio;
        const videoPath = form.paths.reference_video;
        if (!audioPath) throw invalid('missing file "audio"');
        if (!videoPath) throw invalid('missing file "reference_video"');
        const fields = checkFields(LipsyncFields, form.fields);
        const provider = fields.provider ? runtime.lipsync.provider(fields.provider) : defaultProvider;
        const preset = fields.lipsync_preset || provider.presets()[0]!;
        if (!provider.presets().includes(preset)) throw invalid(`unknown lipsync_preset "${preset}" for provider ${provider.name} (known: ${provider.presets().join(', ')})`);
        await probeInputs(audioPath, videoPath);
        const view = table.submit({ id, dir, provider, preset, audioPath, referenceVideoPath: videoPath });
        req.log.info({ lipsync_id: view.lipsync_id, provider: provider.name, preset }, 'lip-sync job accepted');
        return reply.status(202).send({ lipsync_id: view.lipsync_id, status: view.status });
      } catch (e) {
        table.release(dir);
        throw e;
      }
    },
  );

  app.get<IdParams>('/lipsync/:id', { schema: { summary: 'A lip-sync job\'s state' } }, async (req) => table.get(req.params.id));

  app.get<IdParams>('/lipsync/:id/result', { schema: { summary: 'The finished video (409 until done)' } }, async (req, reply) => {
    const file = table.resultPath(req.params.id);
    return reply
      .type('video/mp4')
      .header('x-content-type-options', 'nosniff')
      .header('content-disposition', `attachment; filename="${req.params.id}.mp4"`)
      .send(createReadStream(file));
  });

  app.post<IdParams>('/lipsync/:id/cancel', { schema: { summary: 'Cancel a queued or running job' } }, async (req) => table.cancel(req.params.id));

  app.delete<IdParams>('/lipsync/:id', { schema: { summary: 'Remove a job and its files' } }, async (req) => {
    table.delete(req.params.id);
    return { lipsync_id: req.params.id, deleted: true };
  });
}
