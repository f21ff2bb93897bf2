// The `onnx` generator: a Wav2Lip-style network on onnxruntime. The face is tracked with the
// viseme provider's models (trackReference); per output frame the network gets the face crop
// (S×S, its lower half blanked, beside the unmasked crop: 6 channels) and the mel window
// around that moment (80 bins × 16 frames, Wav2Lip's normalisation), and returns the crop
// with a new mouth, which is resized back and blended over the lower face with a feathered
// ellipse through the native addon, so nothing outside the mouth region changes.
import ort from 'onnxruntime-node';
import { decodeAudio } from '../../../media/ffmpeg.ts';
import { blendRgba, featherMask, melSpectrogram } from '../../../native/index.ts';
import { LipsyncAbortedError } from '../types.ts';
import { FaceTracker, type Landmarks } from '../viseme/face.ts';
import { FRAME_BATCH, MAX_FPS, pingPong, trackReference } from '../viseme/generate.ts';
import { smoothTracks } from '../viseme/mouth.ts';
import { probeVideo, scaledSize, writeMp4 } from '../viseme/video.ts';
import type { LipsyncModelSpec } from './model.ts';

export interface OnnxLipsyncSettings {
  maxHeight: number;
  landmarkStep: number;
  /** Frames per network call. */
  batch: number;
  x264Preset: string;
  crf: number;
}

export const ONNX_PRESETS: Record<string, OnnxLipsyncSettings> = {
  fast: { maxHeight: 480, landmarkStep: 3, batch: FRAME_BATCH, x264Preset: 'veryfast', crf: 23 },
  quality: { maxHeight: 720, landmarkStep: 1, batch: FRAME_BATCH, x264Preset: 'medium', crf: 20 },
};

export const MEL_RATE = 16000;
export const MEL_BINS = 80;
/** Wav2Lip's hop: 200 samples at 16 kHz, 80 mel frames per second. */
export const MEL_FPS = 80;

/**
 * Wav2Lip's mel features: 80 bins, 800-sample window, 200-sample hop, 55–7600 Hz,
 * pre-emphasis 0.97, frames centred on t·hop, dB − 20 mapped to [−4, 4]. Returns
 * [frames × 80] (frame-major). The native addon gives natural-log power mels (HTK scale), so
 * this matches Wav2Lip's librosa (Slaney, magnitude) features closely, not bit for bit.
 */
export function wav2lipMel(samples: Float32Array): { frames: number; data: Float32Array } {
  const padded = new Float32Array(samples.length + 800);
  padded.set(samples, 400); // centred frames, as librosa's stft(center=True)
  const mel = melSpectrogram(padded, MEL_RATE, { frameMs: 50, hopMs: 12.5, nMels: MEL_BINS, fMin: 55, fMax: 7600, preEmphasis: 0.97 });
  const out = new Float32Array(mel.data.length);
  const toDb = 10 / Math.LN10; // ln(power) → dB
  for (let i = 0; i < out.length; i++) {
    const db = Math.max(-100, mel.data[i]! * toDb) - 20;
    out[i] = Math.min(4, Math.max(-4, 8 * ((db + 100) / 100) - 4));
  }
  return { frames: mel.frames, data: out };
}

/**
 * The mel window of video frame `f` written into `out` at `offset` as [80 × step]
 * (bin-major, Wav2Lip's mel[:, start:start+step]); starts at ⌊80·f/fps⌋, clamped to the last
 * full window; frames past the audio read as silence (−4).
 */
export function melWindow(mel: { frames: number; data: Float32Array }, f: number, fps: number, step: number, out: Float32Array, offset: number): void {
  let start = Math.floor((MEL_FPS * f) / fps);
  if (start + step > mel.frames) start = Math.max(0, mel.frames - step);
  for (let b = 0; b < MEL_BINS; b++) {
    for (let k = 0; k < step; k++) {
      const t = start + k;
      out[offset + b * step + k] = t < mel.frames ? mel.data[t * MEL_BINS + b]! : -4;
    }
  }
}

export interface FaceBox {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** Face box from the landmarks (brow to chin, a little room below the chin as Wav2Lip's pads), in the frame. */
export function faceBox(p: Landmarks, width: number, height: number): FaceBox {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (let i = 0; i < p.length; i += 2) {
    x0 = Math.min(x0, p[i]!);
    x1 = Math.max(x1, p[i]!);
    y0 = Math.min(y0, p[i + 1]!);
    y1 = Math.max(y1, p[i + 1]!);
  }
  y1 += 0.06 * (y1 - y0);
  return {
    x0: Math.max(0, Math.floor(x0)),
    y0: Math.max(0, Math.floor(y0)),
    x1: Math.min(width, Math.ceil(x1)),
    y1: Math.min(height, Math.ceil(y1)),
  };
}

const CHANNELS = { rgb: [0, 1, 2], bgr: [2, 1, 0] } as const;

/**
 * The network's face input for one frame, written into `out` at `offset` as [6 × S × S] in 0..1:
 * channels 0–2 the crop with its lower half blanked (what the network must fill in), 3–5 the
 * whole crop (the identity reference).
 */
export function faceInput(frame: Uint8Array, width: number, box: FaceBox, size: number, order: 'rgb' | 'bgr', out: Float32Array, offset: number): void {
  const plane = size * size;
  const bw = box.x1 - box.x0, bh = box.y1 - box.y0;
  const ch = CHANNELS[order];
  for (let j = 0; j < size; j++) {
    const fy = Math.min(bh - 1, Math.max(0, ((j + 0.5) * bh) / size - 0.5));
    const iy = Math.floor(fy), ty = fy - iy, iy1 = Math.min(bh - 1, iy + 1);
    for (let i = 0; i < size; i++) {
      const fx = Math.min(bw - 1, Math.max(0, ((i + 0.5) * bw) / size - 0.5));
      const ix = Math.floor(fx), tx = fx - ix, ix1 = Math.min(bw - 1, ix + 1);
      const p00 = ((box.y0 + iy) * width + box.x0 + ix) * 4, p01 = ((box.y0 + iy) * width + box.x0 + ix1) * 4;
      const p10 = ((box.y0 + iy1) * width + box.x0 + ix) * 4, p11 = ((box.y0 + iy1) * width + box.x0 + ix1) * 4;
      const o = j * size + i;
      for (let c = 0; c < 3; c++) {
        const src = ch[c]!;
        const top = frame[p00 + src]! + (frame[p01 + src]! - frame[p00 + src]!) * tx;
        const bot = frame[p10 + src]! + (frame[p11 + src]! - frame[p10 + src]!) * tx;
        const v = (top + (bot - top) * ty) / 255;
        out[offset + (3 + c) * plane + o] = v;
        out[offset + c * plane + o] = j >= size / 2 ? 0 : v;
      }
    }
  }
}

/** The blend region inside the face box: the lower face, where the network drew the mouth. */
export function mouthEllipse(bw: number, bh: number): { cx: number; cy: number; rx: number; ry: number } {
  return { cx: bw / 2, cy: 0.74 * bh, rx: 0.36 * bw, ry: 0.24 * bh };
}

/**
 * Puts the network's output for one frame ([3 × S × S] at `offset`, 0..1) back over the face
 * box of `frame` (RGBA, in place): bilinear resize to the box, feathered blend over the mouth.
 */
export function pasteFace(frame: Uint8Array, width: number, box: FaceBox, pred: Float32Array, offset: number, size: number, order: 'rgb' | 'bgr', scratch: { src?: Uint8Array; dst?: Uint8Array } = {}): void {
  const bw = box.x1 - box.x0, bh = box.y1 - box.y0;
  if (bw < 2 || bh < 2) return;
  const n = bw * bh * 4;
  if (!scratch.src || scratch.src.length < n) scratch.src = new Uint8Array(n);
  if (!scratch.dst || scratch.dst.length < n) scratch.dst = new Uint8Array(n);
  const src = scratch.src.subarray(0, n), dst = scratch.dst.subarray(0, n);
  const plane = size * size;
  const ch = CHANNELS[order];
  for (let j = 0; j < bh; j++) {
    const fy = Math.min(size - 1, Math.max(0, ((j + 0.5) * size) / bh - 0.5));
    const iy = Math.floor(fy), ty = fy - iy, iy1 = Math.min(size - 1, iy + 1);
    for (let i = 0; i < bw; i++) {
      const fx = Math.min(size - 1, Math.max(0, ((i + 0.5) * size) / bw - 0.5));
      const ix = Math.floor(fx), tx = fx - ix, ix1 = Math.min(size - 1, ix + 1);
      const q = (j * bw + i) * 4;
      for (let c = 0; c < 3; c++) {
        const base = offset + c * plane;
        const top = pred[base + iy * size + ix]! + (pred[base + iy * size + ix1]! - pred[base + iy * size + ix]!) * tx;
        const bot = pred[base + iy1 * size + ix]! + (pred[base + iy1 * size + ix1]! - pred[base + iy1 * size + ix]!) * tx;
        src[q + ch[c]!] = Math.min(255, Math.max(0, Math.round((top + (bot - top) * ty) * 255)));
      }
      src[q + 3] = 255;
      const f = ((box.y0 + j) * width + box.x0 + i) * 4;
      dst[q] = frame[f]!;
      dst[q + 1] = frame[f + 1]!;
      dst[q + 2] = frame[f + 2]!;
      dst[q + 3] = frame[f + 3]!;
    }
  }
  const e = mouthEllipse(bw, bh);
  blendRgba(dst, src, featherMask(bw, bh, e, Math.max(2, Math.min(e.rx, e.ry) * 0.4)), bw, bh);
  for (let j = 0; j < bh; j++) frame.set(dst.subarray(j * bw * 4, (j + 1) * bw * 4), ((box.y0 + j) * width + box.x0) * 4);
}

/** The network's input names: from the manifest, else the one named like mel/audio is the mel. */
export function inputNames(session: { inputNames: readonly string[] }, spec: LipsyncModelSpec): { mel: string; face: string } {
  if (spec.inputs) return spec.inputs;
  const names = session.inputNames;
  const mel = names.find((n) => /mel|audio/i.test(n));
  const face = names.find((n) => n !== mel);
  if (names.length !== 2 || !mel || !face) {
    throw new Error(`lip-sync model ${spec.file} has inputs [${names.join(', ')}]; name them in models/manifest.json ("lipsync": {"inputs": {"mel": …, "face": …}})`);
  }
  return { mel, face };
}

export interface OnnxLipsyncJob {
  audioPath: string;
  referenceVideoPath: string;
  outputPath: string;
  settings: OnnxLipsyncSettings;
  modelsDir: string;
  model: LipsyncModelSpec;
  cancelled: () => boolean;
}

export interface OnnxLipsyncStats {
  width: number;
  height: number;
  fps: number;
  frames: number;
  landmarkMs: number;
  modelMs: number;
  totalMs: number;
}

export async function generateOnnxLipsync(job: OnnxLipsyncJob): Promise<OnnxLipsyncStats> {
  const t0 = performance.now();
  const check = () => {
    if (job.cancelled()) throw new LipsyncAbortedError('lip-sync generation cancelled');
  };
  const info = await probeVideo(job.referenceVideoPath);
  const { width, height } = scaledSize(info.width, info.height, job.settings.maxHeight);
  const fps = Math.min(MAX_FPS, info.fps);
  const samples = await decodeAudio(job.audioPath, MEL_RATE);
  if (samples.length === 0) throw new Error('the narration audio is empty');
  const frames = Math.max(1, Math.round((samples.length / MEL_RATE) * fps));
  const mel = wav2lipMel(samples);
  const S = job.model.inputSize, step = job.model.melStep;
  check();

  const session = await ort.InferenceSession.create(job.model.file, { intraOpNumThreads: 1, interOpNumThreads: 1, logSeverityLevel: 3 });
  const names = inputNames(session, job.model);
  const tracker = await FaceTracker.create(job.modelsDir);
  let landmarkMs = 0, modelMs = 0;
  try {
    const tl = performance.now();
    const ref = await trackReference(tracker, job.referenceVideoPath, width, height, fps, frames, job.settings.landmarkStep, check);
    // Boxes follow the face smoothly: a jittering crop makes a jittering mouth.
    const boxes = smoothTracks(ref.tracks, 2).map((p) => faceBox(p, width, height));
    landmarkMs = performance.now() - tl;
    const m = ref.frames.length;
    const writer = writeMp4(job.outputPath, width, height, fps, job.audioPath, job.settings.x264Preset, job.settings.crf);
    const scratch = {};
    try {
      for (let b = 0; b < frames; b += job.settings.batch) {
        check();
        const n = Math.min(job.settings.batch, frames - b);
        const face = new Float32Array(n * 6 * S * S);
        const melIn = new Float32Array(n * MEL_BINS * step);
        for (let i = 0; i < n; i++) {
          const r = pingPong(b + i, m);
          faceInput(ref.frames[r]!, width, boxes[r]!, S, job.model.channelOrder, face, i * 6 * S * S);
          melWindow(mel, b + i, fps, step, melIn, i * MEL_BINS * step);
        }
        const tm = performance.now();
        const out = await session.run({
          [names.mel]: new ort.Tensor('float32', melIn, [n, 1, MEL_BINS, step]),
          [names.face]: new ort.Tensor('float32', face, [n, 6, S, S]),
        });
        modelMs += performance.now() - tm;
        const pred = out[session.outputNames[0]!]!;
        if (pred.dims.length !== 4 || pred.dims[0] !== n || pred.dims[1] !== 3 || pred.dims[2] !== S || pred.dims[3] !== S) {
          throw new Error(`lip-sync model ${job.model.file} returned [${pred.dims.join(', ')}], expected [${n}, 3, ${S}, ${S}]`);
        }
        const data = pred.data as Float32Array;
        for (let i = 0; i < n; i++) {
          const r = pingPong(b + i, m);
          const frame = ref.frames[r]!.slice();
          pasteFace(frame, width, boxes[r]!, data, i * 3 * S * S, S, job.model.channelOrder, scratch);
          await writer.write(frame);
        }
      }
      await writer.finish();
    } catch (e) {
      writer.kill();
      throw e;
    }
  } finally {
    await tracker.release();
    await session.release();
  }
  return { width, height, fps, frames, landmarkMs, modelMs, totalMs: performance.now() - t0 };
}
