// Aligners by name. Each module is imported only when its aligner is asked for.
import type { Aligner } from '../types.ts';
import { MissingModelError } from '../types.ts';

export interface AlignerOptions {
  modelsDir: string;
  device: 'cpu' | 'cuda';
}

/** An aligner that holds helper processes; close() ends them. */
export type ClosableAligner = Aligner & { close(): Promise<void> };

type Factory = (opts: AlignerOptions) => Promise<ClosableAligner>;

const factories: Record<string, Factory> = {
  dtw: async () => (await import('./dtw.ts')).createDtwAligner() as Promise<ClosableAligner>,
  ctc: async (opts) => {
    throw new MissingModelError(
      `the ctc aligner needs a CTC acoustic model, and none is installed in ${opts.modelsDir} (see models/manifest.json); use the dtw aligner`,
    );
  },
};

export const ALIGNERS = Object.keys(factories);

export async function createAligner(name: string, opts: AlignerOptions): Promise<ClosableAligner> {
  const factory = factories[name];
  if (!factory) throw new Error(`unknown aligner "${name}" (known: ${ALIGNERS.join(', ')})`);
  return factory(opts);
}
