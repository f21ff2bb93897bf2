// Typed front of the native addon (native/addon.cc, built into
// build/Release/lectern_native.node by `npm run build:native`). Arguments are checked
// and options resolved here, with the same helpers the TypeScript reference uses, so
// the C++ only runs the loops. The addon is loaded on first use: a process that never
// calls these functions does not need it, and one that does gets a clear error.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { LecternError } from '../core/errors.ts';
import {
  bandWindows,
  checkBlendArgs,
  checkDtwArgs,
  checkFeatherArgs,
  checkResampleArgs,
  frameCount,
  resampleFilter,
  resampledLength,
  resolveFeatureOptions,
  type ResampleFilter,
  type DtwBand,
  type DtwResult,
  type Ellipse,
  type FeatureOptions,
  type Features,
} from './types.ts';

export type { DtwBand, DtwResult, Ellipse, FeatureOptions, Features, NativeFunctions } from './types.ts';

interface Binding {
  abiVersion: number;
  resample(input: Float32Array, fromRate: number, toRate: number, outLen: number, beta: number, rolloff: number, zeroCrossings: number): Float32Array;
  logMel(
    samples: Float32Array, sampleRate: number, frames: number, frameLen: number, hop: number, nfft: number,
    nMels: number, fMin: number, fMax: number, preEmphasis: number, nCoeffs: number,
  ): Float32Array;
  frameEnergy(samples: Float32Array, frames: number, frameLen: number, hop: number): Float32Array;
  dtw(a: Float32Array, b: Float32Array, dims: number, lo: Int32Array, hi: Int32Array, cells: number): { path: Int32Array; cost: number };
  blendRgba(dst: Uint8Array, src: Uint8Array, mask: Uint8Array | Float32Array, pixels: number): void;
  featherMask(width: number, height: number, cx: number, cy: number, rx: number, ry: number, feather: number): Float32Array;
}

const ABI_VERSION = 2;

export class NativeAddonError extends LecternError {
  constructor(message: string) {
    super('NATIVE_ADDON', message);
    this.name = 'NativeAddonError';
  }
}

export const addonPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../build/Release/lectern_native.node');

let binding: Binding | undefined;

export function loadNative(): Binding {
  binding ??= loadBinding(addonPath);
  return binding;
}

/** Loads and version-checks an addon file; exported so the failure message can be tested. */
export function loadBinding(file: string): Binding {
  let b: Binding;
  try {
    b = createRequire(import.meta.url)(file) as Binding;
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new NativeAddonError(`the native addon ${file} could not be loaded (${why}); build it with \`npm run build:native\``);
  }
  if (b.abiVersion !== ABI_VERSION) {
    throw new NativeAddonError(`the native addon at ${file} is out of date (abi ${b.abiVersion}, need ${ABI_VERSION}); rebuild it with \`npm run build:native\``);
  }
  return b;
}

/** True when the addon is built and loads; never throws. */
export function nativeAvailable(): boolean {
  try {
    loadNative();
    return true;
  } catch {
    return false;
  }
}

export function resample(input: Float32Array, fromRate: number, toRate: number, filter?: ResampleFilter): Float32Array {
  checkResampleArgs(input, fromRate, toRate);
  const f = resampleFilter(filter);
  if (fromRate === toRate) return input.slice();
  return loadNative().resample(input, fromRate, toRate, resampledLength(input.length, fromRate, toRate), f.beta, f.rolloff, f.zeroCrossings);
}

function features(samples: Float32Array, sampleRate: number, opts: FeatureOptions | undefined, cepstra: boolean): Features {
  if (!(samples instanceof Float32Array)) throw new TypeError('samples must be a Float32Array');
  const o = resolveFeatureOptions(sampleRate, opts);
  const frames = frameCount(samples.length, o.frameLen, o.hop);
  const dims = cepstra ? o.nCoeffs : o.nMels;
  const data = loadNative().logMel(samples, sampleRate, frames, o.frameLen, o.hop, o.nfft, o.nMels, o.fMin, o.fMax, o.preEmphasis, cepstra ? o.nCoeffs : 0);
  return { frames, dims, data };
}

/** Log-mel energies (natural log, floor 1e-10), frames × nMels. */
export function melSpectrogram(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Features {
  return features(samples, sampleRate, opts, false);
}

/** MFCCs: orthonormal DCT-II of the log-mel energies, first nCoeffs (c0 included). */
export function mfcc(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Features {
  return features(samples, sampleRate, opts, true);
}

/** Natural log of each frame's energy (sum of squared raw samples, floor 1e-10), same framing. */
export function frameEnergy(samples: Float32Array, sampleRate: number, opts?: FeatureOptions): Float32Array {
  if (!(samples instanceof Float32Array)) throw new TypeError('samples must be a Float32Array');
  const o = resolveFeatureOptions(sampleRate, opts);
  return loadNative().frameEnergy(samples, frameCount(samples.length, o.frameLen, o.hop), o.frameLen, o.hop);
}

/**
 * Banded DTW, Euclidean frame distance, steps (1,1) (1,0) (0,1) each adding the distance
 * of the cell entered; ties prefer diagonal, then up, then left. `band` is a radius around
 * the length-scaled diagonal, or {centre, radius} with one centre column per row of `a`
 * (e.g. a coarse pass's path upsampled) for coarse-to-fine alignment.
 * Memory: one byte per band cell (n·(2·radius+1)) plus O(n + m).
 */
export function dtwBanded(a: Float32Array, b: Float32Array, dims: number, band: DtwBand): DtwResult {
  const { n, m } = checkDtwArgs(a, b, dims);
  const { lo, hi, cells } = bandWindows(n, m, band);
  return loadNative().dtw(a, b, dims, lo, hi, cells);
}

/** dst = dst·(1−α) + src·α per RGBA channel, rounded; α = mask/255 (Uint8Array) or clamp(mask, 0, 1). */
export function blendRgba(dst: Uint8Array, src: Uint8Array, mask: Uint8Array | Float32Array, width: number, height: number): void {
  checkBlendArgs(dst, src, mask, width, height);
  loadNative().blendRgba(dst, src, mask, width * height);
}

/** α = 1 deep inside the ellipse, smoothstep down to 0 over `feather` pixels before its edge. */
export function featherMask(width: number, height: number, e: Ellipse, feather: number): Float32Array {
  checkFeatherArgs(width, height, e, feather);
  return loadNative().featherMask(width, height, e.cx, e.cy, e.rx, e.ry, feather);
}
