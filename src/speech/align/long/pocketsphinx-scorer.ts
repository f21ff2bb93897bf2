// Which acoustic scorer the long-recording recogniser's pocketsphinx_batch runs. `simd` (the
// default): Debian's library with its PTM frame scorer replaced, through LD_PRELOAD, by
// native/pocketsphinx/ptm_frame_eval.c (eight densities a vector), which
// scripts/build-pocketsphinx-scorer.sh builds into build/ and checks against the library's own
// output on real speech: the same words, times and scores, in less CPU. `stock`: the library
// as it is (the benches' baseline and the test that the two agree).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeAddonError } from '../../../native/index.ts';

export type RecognizerScorer = 'simd' | 'stock';

export const scorerLibraryPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../build/pocketsphinx-ptm.so');

interface Stamp {
  library?: string;
  library_sha256?: string;
  sha256?: string;
  verified?: boolean;
  reason?: string;
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

let cached: { env: Record<string, string>; scorer: RecognizerScorer } | undefined;

/**
 * The environment to run pocketsphinx_batch in, and the scorer it then runs. The build must be
 * there and checked against the installed library: one checked against another (Debian updated
 * libpocketsphinx) could mistake its structures, so it is refused, naming the rebuild, as a
 * missing native addon is. A build the check turned down (its output differed), or none made
 * because pocketsphinx, ffmpeg or a compiler was missing then, leaves the library's own scorer,
 * with a warning: the recogniser is correct, only slower.
 */
export function recognizerScorer(scorer: RecognizerScorer = 'simd', file: string = scorerLibraryPath): { env: Record<string, string>; scorer: RecognizerScorer } {
  if (scorer === 'stock') return { env: {}, scorer };
  if (cached && file === scorerLibraryPath) return cached;
  const stampFile = file.replace(/\.so$/, '.json');
  const rebuild = 'build it with `npm run build:native`';
  if (!existsSync(stampFile)) throw new NativeAddonError(`the recogniser's acoustic scorer (${file}) is missing; ${rebuild}`);
  const stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as Stamp;
  let result: { env: Record<string, string>; scorer: RecognizerScorer };
  if (!stamp.verified) {
    process.emitWarning(`pocketsphinx_batch runs its own acoustic scorer: ${stamp.reason ?? 'the build was not checked'} (the same words, more CPU)`, { code: 'LECTERN_RECOGNIZER_STOCK_SCORER' });
    result = { env: {}, scorer: 'stock' };
  } else if (!stamp.library || !existsSync(stamp.library) || stamp.library_sha256 !== sha256(stamp.library)) {
    throw new NativeAddonError(`the recogniser's acoustic scorer (${file}) was checked against another libpocketsphinx than the installed one; ${rebuild}`);
  } else if (!existsSync(file) || stamp.sha256 !== sha256(file)) {
    throw new NativeAddonError(`the recogniser's acoustic scorer (${file}) is not the build that was checked; ${rebuild}`);
  } else {
    result = { env: { LD_PRELOAD: file }, scorer: 'simd' };
  }
  if (file === scorerLibraryPath) cached = result;
  return result;
}
