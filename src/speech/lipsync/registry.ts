// Lip-sync providers by name. `auto` picks the best one installed; with none installed
// the GPU server reports no `lipsync` capability (never a fake provider).
import { createCommandProvider } from './command.ts';
import type { LipsyncProvider } from './types.ts';
import { createVisemeProvider, visemeUnavailableReason } from './viseme.ts';

export interface LipsyncProviderOptions {
  modelsDir: string;
  device: 'cpu' | 'cuda';
  /** The `command` provider's template (LECTERN_LIPSYNC_COMMAND); null/empty → not installed. */
  command?: string | null;
  commandPresets?: string[];
  commandTimeoutMs?: number;
}

export const LIPSYNC_PROVIDERS = ['command', 'viseme'] as const;

export class LipsyncUnavailableError extends Error {
  override name = 'LipsyncUnavailableError';
}

/** Names of the providers usable with these options, best first. */
export function installedLipsyncProviders(opts: LipsyncProviderOptions): string[] {
  const out: string[] = [];
  if (opts.command && opts.command.trim()) out.push('command');
  // viseme: the CPU generator, installed whenever the face models, ffmpeg and the native addon are.
  if (visemeUnavailableReason(opts.modelsDir) === null) out.push('viseme');
  return out;
}

export async function createLipsyncProvider(name: string, opts: LipsyncProviderOptions): Promise<LipsyncProvider> {
  const resolved = name === 'auto' ? installedLipsyncProviders(opts)[0] : name;
  if (!resolved) {
    throw new LipsyncUnavailableError('no lip-sync provider is installed (set LECTERN_LIPSYNC_COMMAND for the command provider, or put the face models in models/face for the viseme provider)');
  }
  switch (resolved) {
    case 'command':
      if (!opts.command || !opts.command.trim()) {
        throw new LipsyncUnavailableError('the command lip-sync provider needs LECTERN_LIPSYNC_COMMAND');
      }
      return createCommandProvider({ command: opts.command, presets: opts.commandPresets, timeoutMs: opts.commandTimeoutMs });
    case 'viseme': {
      const why = visemeUnavailableReason(opts.modelsDir);
      if (why) throw new LipsyncUnavailableError(why);
      return createVisemeProvider({ modelsDir: opts.modelsDir });
    }
    default:
      throw new LipsyncUnavailableError(`unknown lip-sync provider "${resolved}" (known: ${LIPSYNC_PROVIDERS.join(', ')}, auto)`);
  }
}
