// Which WebAssembly build of soundswallower the `hmm` aligner runs. `simd` (the default) is the
// package's own decoder with its Gaussian scorer rewritten for WebAssembly SIMD and its
// per-frame sweep of the grammar history made to skip empty rows, by
// scripts/build-soundswallower-simd.mjs (npm install / `npm run build:native` build it into
// build/): the same word times bit for bit, in half the CPU on long segments. `stock` is the
// package's build unchanged (the benches' baseline and the test that the two agree).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeAddonError } from '../../native/index.ts';

export type Scorer = 'simd' | 'stock';

export const simdBuildPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../build/soundswallower-simd.wasm');

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
/** Node's WebAssembly global (this project's TypeScript libs do not declare it). */
const wasm = (globalThis as unknown as { WebAssembly: { validate(bytes: Uint8Array): boolean } }).WebAssembly;

let cached: { binary: Uint8Array | undefined; scorer: Scorer } | undefined;

/**
 * The SIMD build at `file`, checked: it must be there and made from the installed package's
 * build (one left over from another soundswallower would not fit its JavaScript glue).
 */
export function loadSimdBuild(file: string = simdBuildPath): Uint8Array {
  const stamp = file.replace(/\.wasm$/, '.json');
  const rebuild = 'build it with `npm run build:native`';
  if (!existsSync(file) || !existsSync(stamp)) throw new NativeAddonError(`the hmm aligner's SIMD scorer (${file}) is missing; ${rebuild}`);
  const made = JSON.parse(readFileSync(stamp, 'utf8')) as { source_sha256?: string; sha256?: string };
  const stock = path.join(path.dirname(createRequire(import.meta.url).resolve('soundswallower')), 'soundswallower.node.wasm');
  const binary = readFileSync(file);
  if (made.source_sha256 !== sha256(readFileSync(stock)) || made.sha256 !== sha256(binary)) {
    throw new NativeAddonError(`the hmm aligner's SIMD scorer (${file}) was not built from the installed soundswallower; ${rebuild}`);
  }
  return binary;
}

/**
 * The module binary to hand soundswallower's loader (undefined: its own file) and the scorer it
 * holds. A CPU whose WebAssembly has no SIMD (x86 without SSE4.1) runs the stock build, with a
 * warning: the alignments are the same.
 */
export function soundswallowerBinary(scorer: Scorer): { binary: Uint8Array | undefined; scorer: Scorer } {
  if (scorer === 'stock') return { binary: undefined, scorer };
  if (cached) return cached;
  const binary = loadSimdBuild();
  if (!wasm.validate(binary)) {
    // once: the result is cached
    process.emitWarning("this CPU runs no WebAssembly SIMD: the hmm aligner uses soundswallower's stock build (the same alignments, more CPU)", { code: 'LECTERN_NO_WASM_SIMD' });
    cached = { binary: undefined, scorer: 'stock' };
  } else {
    cached = { binary, scorer: 'simd' };
  }
  return cached;
}

/** For /health: which build `hmm` runs here ("simd", or "stock" on a CPU without WebAssembly SIMD), or why it cannot run. */
export function hmmDecoderBuild(): string {
  try {
    return soundswallowerBinary('simd').scorer;
  } catch (err) {
    return `unavailable: ${(err as Error).message}`;
  }
}
