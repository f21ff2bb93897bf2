// Aligners by name. Each module is imported only when its aligner is asked for.
//   hmm  — forced alignment with a PocketSphinx acoustic model (en, fr), refined in the signal
//   dtw  — eSpeak NG reference + MFCC + banded DTW, any eSpeak language, no model
//   auto — hmm for the languages an installed acoustic model covers, dtw for the rest
import { availableParallelism } from 'node:os';
import type { AlignedWord, Aligner, AlignOptions } from '../types.ts';
import { MissingModelError, SpeechInputError } from '../types.ts';
import { alignerSkips, borrowedModel, hmmLanguages, primaryLanguage } from './acoustic-models.ts';
import type { Scorer } from './soundswallower-wasm.ts';
import { createThreadedAligner } from './threaded.ts';

export interface AlignerOptions {
  modelsDir: string;
  device: 'cpu' | 'cuda';
  /**
   * Worker threads to run the aligner in, each with its own (createThreadedAligner): up to
   * this many align() calls then run at once, off the caller's event loop. Absent or 1: in
   * this thread.
   */
  threads?: number;
  /** soundswallower's build for `hmm`: `simd` (default) or `stock`, the package's own (the benches' baseline). */
  hmmScorer?: Scorer;
}

/** An aligner that holds helper processes; close() ends them. */
export type ClosableAligner = Aligner & { close(): Promise<void> };

type Factory = (opts: AlignerOptions) => Promise<ClosableAligner>;

const factories: Record<string, Factory> = {
  auto: async (opts) => createAutoAligner(opts),
  hmm: async (opts) => (await import('./hmm.ts')).createHmmAligner({ scorer: opts.hmmScorer }),
  dtw: async () => (await import('./dtw.ts')).createDtwAligner() as Promise<ClosableAligner>,
  ctc: async (opts) => {
    throw new MissingModelError(
      `the ctc aligner needs a CTC acoustic model, and none is installed in ${opts.modelsDir} (see models/manifest.json); use the hmm, dtw or auto aligner`,
    );
  },
};

export const ALIGNERS = Object.keys(factories);

/** Threads for aligning many pieces at once (a long recording's segments): one per core, at most 4 (each holds a decoder: 100-125 MiB). */
export function defaultAlignerThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

/** Thrown for an aligner name the registry does not know (→ HTTP 422, or a start-up error). */
export class UnknownAlignerError extends SpeechInputError {
  override name = 'UnknownAlignerError';
}

export async function createAligner(name: string, opts: AlignerOptions): Promise<ClosableAligner> {
  const factory = factories[name];
  if (!factory) throw new UnknownAlignerError(`unknown aligner "${name}" (known: ${ALIGNERS.join(', ')})`);
  if ((opts.threads ?? 1) > 1) return createThreadedAligner(name, opts, opts.threads!);
  return factory(opts);
}

/** Which aligner `auto` uses for a language: hmm where an installed acoustic model covers it (or where a borrowed one may do: AlignOptions.borrowModel). */
export function autoAlignerFor(language: string, options?: AlignOptions): 'hmm' | 'dtw' {
  return hmmLanguages().includes(primaryLanguage(language)) || (options?.borrowModel && borrowedModel()) ? 'hmm' : 'dtw';
}

/** What each installed aligner covers, for /health and the README. */
export function alignerCoverage(): Record<string, string[]> {
  return { hmm: hmmLanguages(), dtw: ['every eSpeak NG language'] };
}

/** `auto`: each call goes to the best aligner installed for its language; each is created on first use. */
function createAutoAligner(opts: AlignerOptions): ClosableAligner {
  const made = new Map<string, Promise<ClosableAligner>>();
  const get = (name: 'hmm' | 'dtw') => {
    let p = made.get(name);
    if (!p) {
      p = createAligner(name, opts);
      made.set(name, p);
      p.catch(() => made.delete(name));
    }
    return p;
  };
  return {
    name: 'auto',
    skips: (language) => alignerSkips('auto', language),
    async align(samples: Float32Array, sampleRate: number, text: string, language: string, options?: AlignOptions): Promise<AlignedWord[]> {
      return (await get(autoAlignerFor(language, options))).align(samples, sampleRate, text, language, options);
    },
    async close() {
      const all = await Promise.allSettled(made.values());
      made.clear();
      await Promise.all(all.map((r) => (r.status === 'fulfilled' ? r.value.close() : undefined)));
    },
  };
}
