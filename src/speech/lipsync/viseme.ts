// The `viseme` lip-sync provider: a CPU generator that needs no download beyond the face
// models in models/face. Mouth shapes come from the narration audio itself (loudness →
// jaw/lip opening, spectral balance → lip spread or rounding), because the GPU server's
// /lipsync receives audio and video only; a local caller that synthesized the narration
// may pass its phoneme timings (VisemeRequest.phonemes) instead. See viseme/generate.ts.
// Each generation runs in its own worker thread (run-in-thread.ts).
import { spawnSync } from 'node:child_process';
import { toolPaths } from '../../media/tools.ts';
import { nativeAvailable } from '../../native/index.ts';
import type { PhonemeTiming } from '../types.ts';
import type { LipsyncProvider, LipsyncRequest } from './types.ts';
import { runGeneratorWorker } from './run-in-thread.ts';
import { checkFaceModels } from './viseme/face.ts';
import { VISEME_PRESETS, type VisemeStats } from './viseme/generate.ts';
import type { VisemeWorkerData } from './viseme/generator-thread.ts';

export { VISEME_PRESETS } from './viseme/generate.ts';

/** A request may carry the narration's phoneme timings (local callers that synthesized it); the GPU server's /lipsync has audio only. */
export interface VisemeRequest extends LipsyncRequest {
  phonemes?: PhonemeTiming[];
}

export interface VisemeProviderOptions {
  modelsDir: string;
  /** How long a cancelled worker gets to stop on its own before it is terminated. */
  cancelGraceMs?: number;
  /** Called with the timings of each finished generation (bench, logs). */
  onStats?: (s: VisemeStats) => void;
}

/** Why the viseme provider cannot run here (face models, ffmpeg, native addon), or null when it can. */
export function visemeUnavailableReason(modelsDir: string): string | null {
  try {
    checkFaceModels(modelsDir);
  } catch (e) {
    return (e as Error).message;
  }
  const ffmpeg = toolPaths().ffmpeg;
  const r = spawnSync(ffmpeg, ['-version'], { stdio: 'ignore' });
  if (r.error || r.status !== 0) return `the viseme lip-sync provider needs ffmpeg (looked for "${ffmpeg}")`;
  if (!nativeAvailable()) return 'the viseme lip-sync provider needs the native addon; build it with `npm run build:native`';
  return null;
}

const WORKER_URL = new URL('./viseme/generator-thread-bootstrap.mjs', import.meta.url);

export function createVisemeProvider(opts: VisemeProviderOptions): LipsyncProvider {
  const why = visemeUnavailableReason(opts.modelsDir);
  if (why) throw new Error(why);
  const grace = opts.cancelGraceMs ?? 5000;
  return {
    name: 'viseme',
    presets: () => Object.keys(VISEME_PRESETS),
    generate(req, signal) {
      const settings = VISEME_PRESETS[req.preset];
      if (!settings) return Promise.reject(new Error(`unknown viseme preset "${req.preset}" (known: ${Object.keys(VISEME_PRESETS).join(', ')})`));
      const cancel = new SharedArrayBuffer(4);
      const { phonemes } = req as VisemeRequest;
      const data: VisemeWorkerData = {
        audioPath: req.audioPath,
        referenceVideoPath: req.referenceVideoPath,
        outputPath: req.outputPath,
        phonemes: phonemes?.map((p) => ({ phoneme: p.phoneme, start: p.start, end: p.end })),
        settings,
        modelsDir: opts.modelsDir,
        tools: toolPaths(),
        cancel,
      };
      return runGeneratorWorker<VisemeStats>(WORKER_URL, { ...data }, { outputPath: req.outputPath, signal, graceMs: grace, label: 'viseme', onStats: opts.onStats });
    },
  };
}
