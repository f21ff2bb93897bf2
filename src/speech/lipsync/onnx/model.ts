// Where the `onnx` lip-sync provider finds its model: an operator installs a Wav2Lip-style
// network (face crops + mel windows → the face with a new mouth) under
// models/lipsync/<name>/ and lists it in models/manifest.json with "task": "lipsync".
// Nothing is downloaded; without such an entry the provider is simply not installed.
import fs from 'node:fs';
import path from 'node:path';

export interface LipsyncModelSpec {
  name: string;
  /** Absolute path of the .onnx file. */
  file: string;
  /** Side of the square face crop the network takes (Wav2Lip: 96). */
  inputSize: number;
  /** Mel frames per window (Wav2Lip: 16, i.e. 0.2 s at 80 frames/s). */
  melStep: number;
  /** Channel order of the face tensor (Wav2Lip was trained on OpenCV's BGR frames). */
  channelOrder: 'bgr' | 'rgb';
  /** Input names; found by name (mel/audio vs the other) when the manifest gives none. */
  inputs?: { mel: string; face: string };
}

/** Where the README tells operators to put a model; named in the error when none is installed. */
export const EXAMPLE_MODEL_FILE = 'lipsync/wav2lip/wav2lip.onnx';

interface ManifestEntry {
  name?: unknown;
  task?: unknown;
  files?: unknown;
  lipsync?: { input_size?: unknown; mel_step?: unknown; channel_order?: unknown; inputs?: { mel?: unknown; face?: unknown } };
}

function manifestEntries(modelsDir: string): ManifestEntry[] {
  try {
    const m = JSON.parse(fs.readFileSync(path.join(modelsDir, 'manifest.json'), 'utf8')) as { models?: ManifestEntry[] };
    return Array.isArray(m.models) ? m.models : [];
  } catch {
    return [];
  }
}

/**
 * The first lip-sync model the manifest lists, or an error message that names the missing
 * file and where it goes.
 */
export function findLipsyncModel(modelsDir: string): LipsyncModelSpec | string {
  const entries = manifestEntries(modelsDir).filter((e) => e.task === 'lipsync');
  if (entries.length === 0) {
    return `the onnx lip-sync provider needs a Wav2Lip-style ONNX model, and none is installed: put it at ${path.join(modelsDir, EXAMPLE_MODEL_FILE)} and list it in ${path.join(modelsDir, 'manifest.json')} with "task": "lipsync" (see README, "Lip-sync reader")`;
  }
  const e = entries[0]!;
  const rel = Array.isArray(e.files) ? e.files.find((f): f is string => typeof f === 'string' && f.endsWith('.onnx')) : undefined;
  const name = typeof e.name === 'string' ? e.name : 'lipsync';
  if (!rel || path.isAbsolute(rel) || rel.split(/[\\/]/).includes('..')) return `models/manifest.json: lip-sync model "${name}" lists no .onnx file inside the models folder`;
  const file = path.join(modelsDir, rel);
  if (!fs.existsSync(file)) return `lip-sync model file ${file} is missing: put the "${name}" ONNX model there (models/manifest.json lists it)`;
  const o = e.lipsync ?? {};
  const inputSize = typeof o.input_size === 'number' ? o.input_size : 96;
  const melStep = typeof o.mel_step === 'number' ? o.mel_step : 16;
  const channelOrder = o.channel_order === 'rgb' ? 'rgb' : 'bgr';
  const inputs = typeof o.inputs?.mel === 'string' && typeof o.inputs?.face === 'string' ? { mel: o.inputs.mel, face: o.inputs.face } : undefined;
  return { name, file, inputSize, melStep, channelOrder, inputs };
}
