// The `onnx` lip-sync provider: a Wav2Lip-style network an operator installs under
// models/lipsync/<name>/ (listed in models/manifest.json), with the viseme provider's face
// tracking and blending around it (onnx/generate.ts). Not installed without such a model:
// asking for it then is an error naming the file and where it goes.
import { toolPaths } from '../../media/tools.ts';
import type { LipsyncProvider } from './types.ts';
import { findLipsyncModel } from './onnx/model.ts';
import { ONNX_PRESETS, type OnnxLipsyncStats } from './onnx/generate.ts';
import type { OnnxWorkerData } from './onnx/generator-thread.ts';
import { visemeUnavailableReason } from './viseme.ts';
import { runGeneratorWorker } from './run-in-thread.ts';

export { ONNX_PRESETS } from './onnx/generate.ts';

/** Why the onnx provider cannot run here (its model, then the face models, ffmpeg and addon it shares with viseme), or null. */
export function onnxUnavailableReason(modelsDir: string): string | null {
  const model = findLipsyncModel(modelsDir);
  if (typeof model === 'string') return model;
  return visemeUnavailableReason(modelsDir)?.replace('viseme', 'onnx') ?? null;
}

const WORKER_URL = new URL('./onnx/generator-thread-bootstrap.mjs', import.meta.url);

export function createOnnxProvider(opts: { modelsDir: string; cancelGraceMs?: number; onStats?: (s: OnnxLipsyncStats) => void }): LipsyncProvider {
  const why = onnxUnavailableReason(opts.modelsDir);
  if (why) throw new Error(why);
  const model = findLipsyncModel(opts.modelsDir);
  if (typeof model === 'string') throw new Error(model);
  return {
    name: 'onnx',
    presets: () => Object.keys(ONNX_PRESETS),
    generate(req, signal) {
      const settings = ONNX_PRESETS[req.preset];
      if (!settings) return Promise.reject(new Error(`unknown onnx lip-sync preset "${req.preset}" (known: ${Object.keys(ONNX_PRESETS).join(', ')})`));
      const data: OnnxWorkerData = {
        audioPath: req.audioPath,
        referenceVideoPath: req.referenceVideoPath,
        outputPath: req.outputPath,
        settings,
        modelsDir: opts.modelsDir,
        model,
        cancel: new SharedArrayBuffer(4),
        tools: toolPaths(),
      };
      return runGeneratorWorker<OnnxLipsyncStats>(WORKER_URL, { ...data }, { outputPath: req.outputPath, signal, graceMs: opts.cancelGraceMs ?? 5000, label: 'onnx', onStats: opts.onStats });
    },
  };
}
