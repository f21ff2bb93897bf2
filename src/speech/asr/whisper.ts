// Whisper-family transcription on onnxruntime, for operators who install a model.
//
// Expected layout (the sherpa-onnx Whisper export, files renamed), one folder per model:
//   models/asr/whisper-<size>/encoder.onnx   mel [1, n_mels, 3000] → n_layer_cross_k, n_layer_cross_v
//   models/asr/whisper-<size>/decoder.onnx   tokens [1,n], in_n_layer_self_k_cache, in_n_layer_self_v_cache,
//                                            n_layer_cross_k, n_layer_cross_v, offset [1]
//                                            → logits [1,n,vocab], out_n_layer_self_k_cache, out_n_layer_self_v_cache
//   models/asr/whisper-<size>/tokens.txt     "<base64 bytes> <id>" per line (sherpa-onnx's tokens file)
//   models/asr/whisper-<size>/config.json    the special tokens, which onnxruntime-node cannot read from the
//                                            model metadata: {"n_mels":80,"n_text_ctx":448,"sot":50258,"eot":50257,
//                                            "transcribe":50359,"no_timestamps":50363,"languages":{"en":50259,...}}
// The first whisper-* folder (sorted) is used. Decoding is greedy, 30-second windows.
import fs from 'node:fs';
import path from 'node:path';
import { Tensor } from 'onnxruntime-node';
import type ort from 'onnxruntime-node';
import { resample } from '../../native/index.ts';
import { getOrLoad, createSession } from '../model-cache.ts';
import type { Transcriber } from '../types.ts';
import { MissingModelError, SpeechInputError } from '../types.ts';
import type { TranscriberOptions } from '../types.ts';

export const WHISPER_FILES = ['encoder.onnx', 'decoder.onnx', 'tokens.txt', 'config.json'] as const;

interface WhisperConfig {
  n_mels: number;
  n_text_ctx: number;
  sot: number;
  eot: number;
  transcribe: number;
  no_timestamps: number;
  languages: Record<string, number>;
}

const RATE = 16000;
const N_FFT = 400;
const HOP = 160;
const FRAMES = 3000; // 30 s

/** The model folder, or a MissingModelError naming every file the engine needs. */
export function findWhisperModel(modelsDir: string): string {
  const root = path.join(modelsDir, 'asr');
  const dirs = fs.existsSync(root)
    ? fs.readdirSync(root).filter((d) => d.startsWith('whisper-')).sort().map((d) => path.join(root, d))
    : [];
  const expected = `${path.join(root, 'whisper-<size>')}/{${WHISPER_FILES.join(',')}}`;
  if (dirs.length === 0) throw new MissingModelError(`no Whisper model installed: expected ${expected} (see src/speech/asr/whisper.ts for the layout)`);
  const dir = dirs[0]!;
  const missing = WHISPER_FILES.filter((f) => !fs.existsSync(path.join(dir, f)));
  if (missing.length) throw new MissingModelError(`Whisper model in ${dir} is incomplete: missing ${missing.join(', ')} (expected ${expected})`);
  return dir;
}

function hzToMel(f: number): number {
  // Slaney scale (librosa's default, which Whisper's filters use): linear below 1 kHz, log above.
  return f < 1000 ? (3 * f) / 200 : 15 + Math.log(f / 1000) / (Math.log(6.4) / 27);
}
function melToHz(m: number): number {
  return m < 15 ? (200 * m) / 3 : 1000 * Math.exp((Math.log(6.4) / 27) * (m - 15));
}

/** librosa.filters.mel(sr=16000, n_fft=400, n_mels) with Slaney normalisation, [n_mels][201]. */
export function whisperMelFilters(nMels: number): Float32Array[] {
  const bins = N_FFT / 2 + 1;
  const fftFreqs = Array.from({ length: bins }, (_, i) => (i * RATE) / N_FFT);
  const mMax = hzToMel(RATE / 2);
  const pts = Array.from({ length: nMels + 2 }, (_, i) => melToHz((i * mMax) / (nMels + 1)));
  return Array.from({ length: nMels }, (_, m) => {
    const row = new Float32Array(bins);
    const enorm = 2 / (pts[m + 2]! - pts[m]!);
    for (let k = 0; k < bins; k++) {
      const lower = (fftFreqs[k]! - pts[m]!) / (pts[m + 1]! - pts[m]!);
      const upper = (pts[m + 2]! - fftFreqs[k]!) / (pts[m + 2]! - pts[m + 1]!);
      row[k] = Math.max(0, Math.min(lower, upper)) * enorm;
    }
    return row;
  });
}

/** Whisper's log-mel input for one 30-s window (zero-padded), [n_mels * 3000]. */
export function whisperLogMel(window: Float32Array, filters: Float32Array[]): Float32Array {
  const nMels = filters.length;
  const bins = N_FFT / 2 + 1;
  const padded = new Float32Array(FRAMES * HOP);
  padded.set(window.subarray(0, padded.length));
  // center=True with reflect padding, as torch.stft
  const half = N_FFT / 2;
  const x = new Float32Array(padded.length + N_FFT);
  x.set(padded, half);
  for (let i = 0; i < half; i++) {
    x[half - 1 - i] = padded[i + 1]!;
    x[half + padded.length + i] = padded[padded.length - 2 - i]!;
  }
  const hann = Float32Array.from({ length: N_FFT }, (_, n) => 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / N_FFT));
  const cos = new Float32Array(bins * N_FFT);
  const sin = new Float32Array(bins * N_FFT);
  for (let k = 0; k < bins; k++)
    for (let n = 0; n < N_FFT; n++) {
      cos[k * N_FFT + n] = Math.cos((2 * Math.PI * k * n) / N_FFT);
      sin[k * N_FFT + n] = Math.sin((2 * Math.PI * k * n) / N_FFT);
    }
  const out = new Float32Array(nMels * FRAMES);
  const frame = new Float32Array(N_FFT);
  const power = new Float32Array(bins);
  let max = -Infinity;
  for (let t = 0; t < FRAMES; t++) {
    for (let n = 0; n < N_FFT; n++) frame[n] = x[t * HOP + n]! * hann[n]!;
    for (let k = 0; k < bins; k++) {
      let re = 0;
      let im = 0;
      const o = k * N_FFT;
      for (let n = 0; n < N_FFT; n++) {
        re += frame[n]! * cos[o + n]!;
        im -= frame[n]! * sin[o + n]!;
      }
      power[k] = re * re + im * im;
    }
    for (let m = 0; m < nMels; m++) {
      let e = 0;
      const f = filters[m]!;
      for (let k = 0; k < bins; k++) e += f[k]! * power[k]!;
      const v = Math.log10(Math.max(e, 1e-10));
      out[m * FRAMES + t] = v;
      if (v > max) max = v;
    }
  }
  for (let i = 0; i < out.length; i++) out[i] = (Math.max(out[i]!, max - 8) + 4) / 4;
  return out;
}

function readTokens(file: string): Map<number, Buffer> {
  const map = new Map<number, Buffer>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const [tok, id] = line.trim().split(/\s+/);
    if (tok !== undefined && id !== undefined) map.set(Number(id), Buffer.from(tok, 'base64'));
  }
  return map;
}

export async function createWhisperTranscriber(opts: TranscriberOptions): Promise<Transcriber> {
  const dir = findWhisperModel(opts.modelsDir);
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as WhisperConfig;
  for (const k of ['n_mels', 'n_text_ctx', 'sot', 'eot', 'transcribe', 'no_timestamps', 'languages'] as const) {
    if (cfg[k] === undefined) throw new MissingModelError(`${path.join(dir, 'config.json')} lacks "${k}"`);
  }
  const tokens = readTokens(path.join(dir, 'tokens.txt'));
  const filters = whisperMelFilters(cfg.n_mels);
  const key = (part: string) => ({ name: `whisper:${dir}:${part}`, device: opts.device, computeType: 'fp32' });
  const [encoder, decoder] = await Promise.all([
    getOrLoad(key('encoder'), () => createSession(path.join(dir, 'encoder.onnx'), { device: opts.device })),
    getOrLoad(key('decoder'), () => createSession(path.join(dir, 'decoder.onnx'), { device: opts.device })),
  ]);
  const langOf = (language: string) => cfg.languages[language.toLowerCase().split(/[-_]/)[0]!];

  async function window(samples: Float32Array, langToken: number): Promise<string> {
    const mel = whisperLogMel(samples, filters);
    const enc = await encoder.run({ mel: new Tensor('float32', mel, [1, cfg.n_mels, FRAMES]) });
    const crossK = enc.n_layer_cross_k!;
    const crossV = enc.n_layer_cross_v!;
    const [nLayer, , , dModel] = crossK.dims as number[];
    const cacheShape = [nLayer!, 1, cfg.n_text_ctx, dModel!];
    let selfK: ort.Tensor = new Tensor('float32', new Float32Array(nLayer! * cfg.n_text_ctx * dModel!), cacheShape);
    let selfV: ort.Tensor = new Tensor('float32', new Float32Array(nLayer! * cfg.n_text_ctx * dModel!), cacheShape);
    let input = [cfg.sot, langToken, cfg.transcribe, cfg.no_timestamps];
    let offset = 0;
    const out: number[] = [];
    while (offset + input.length < cfg.n_text_ctx / 2) {
      const r = await decoder.run({
        tokens: new Tensor('int64', BigInt64Array.from(input.map(BigInt)), [1, input.length]),
        in_n_layer_self_k_cache: selfK,
        in_n_layer_self_v_cache: selfV,
        n_layer_cross_k: crossK,
        n_layer_cross_v: crossV,
        offset: new Tensor('int64', BigInt64Array.from([BigInt(offset)]), [1]),
      });
      const logits = r.logits!;
      const vocab = logits.dims[2]!;
      const data = logits.data as Float32Array;
      const last = data.subarray((input.length - 1) * vocab, input.length * vocab);
      let best = 0;
      for (let i = 1; i < vocab; i++) if (last[i]! > last[best]!) best = i;
      if (best === cfg.eot) break;
      out.push(best);
      offset += input.length;
      input = [best];
      selfK = r.out_n_layer_self_k_cache!;
      selfV = r.out_n_layer_self_v_cache!;
    }
    return Buffer.concat(out.filter((t) => t < cfg.eot).map((t) => tokens.get(t) ?? Buffer.alloc(0)))
      .toString('utf8')
      .trim();
  }

  return {
    name: 'whisper',
    supports: (language) => langOf(language) !== undefined,
    async transcribe(samples, sampleRate, language) {
      const langToken = langOf(language);
      if (langToken === undefined) throw new SpeechInputError(`the installed Whisper model (${path.basename(dir)}) has no language "${language}"`);
      const audio = sampleRate === RATE ? samples : resample(samples, sampleRate, RATE);
      const parts: string[] = [];
      for (let at = 0; at < audio.length; at += FRAMES * HOP) parts.push(await window(audio.subarray(at, at + FRAMES * HOP), langToken));
      return parts.filter(Boolean).join(' ');
    },
  };
}
