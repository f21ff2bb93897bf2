// One thread of a threaded aligner (threaded.ts): makes its aligner on the first request,
// answers one request at a time.
import { parentPort, workerData } from 'node:worker_threads';
import { toWire } from '../../core/errors.ts';
import { createAligner, type ClosableAligner } from './aligners.ts';
import type { ThreadData, ThreadReply, ThreadRequest } from './threaded.ts';

const data = workerData as ThreadData;
let aligner: Promise<ClosableAligner> | null = null;

parentPort!.on('message', async (req: ThreadRequest) => {
  let reply: ThreadReply;
  try {
    if (req.kind === 'close') {
      if (aligner) await (await aligner.catch(() => null))?.close();
      aligner = null;
      reply = { ok: true, words: [] };
    } else {
      aligner ??= createAligner(data.name, data.options);
      reply = { ok: true, words: await (await aligner).align(req.samples, req.sampleRate, req.text, req.language, req.options) };
    }
  } catch (e) {
    reply = { ok: false, error: toWire(e) };
  }
  parentPort!.postMessage(reply);
});
