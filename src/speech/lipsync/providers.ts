// Lip-sync providers by name. `auto` picks the best one installed; with none installed
// the GPU server reports no `lipsync` capability (never a fake provider).
import { LecternError } from '../../core/errors.ts';
import { createCommandProvider } from './command.ts';
import { createOnnxProvider, onnxUnavailableReason } from './onnx.ts';
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

export const LIPSYNC_PROVIDERS = ['command', 'onnx', 'viseme'] as const;

export class LipsyncUnavailableError extends LecternError {
  override name = 'LipsyncUnavailableError';
  constructor(message: string) {
    super('LIPSYNC_UNAVAILABLE', message);
  }
}

/** Names of the providers usable with these options, best first. */
export function installedLipsyncProviders(opts: LipsyncProviderOptions): string[] {
  const out: string[] = [];
  if (opts.command && opts.command.trim()) out.push('command');
  // onnx: a neural model, listed only when an operator installed one (models/lipsync/, manifest.json).
  if (onnxUnavailableReason(opts.modelsDir) === null) out.push('onnx');
  // viseme: the CPU generator, installed whenever the face models, ffmpeg and the native addon are.
  if (visemeUnavailableReason(opts.modelsDir) === null) out.push('viseme');
  return out;
}

/** Why a known provider is not installed with these options (null when it is, or the name is unknown). */
export function lipsyncUnavailableReason(name: string, opts: LipsyncProviderOptions): string | null {
  if (name === 'onnx') return onnxUnavailableReason(opts.modelsDir);
  if (name === 'viseme') return visemeUnavailableReason(opts.modelsDir);
  if (name === 'command') return opts.command && opts.command.trim() ? null : 'the command lip-sync provider needs LECTERN_LIPSYNC_COMMAND';
  return null;
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
    case 'onnx': {
      const why = onnxUnavailableReason(opts.modelsDir);
      if (why) throw new LipsyncUnavailableError(why);
      return createOnnxProvider({ modelsDir: opts.modelsDir });
    }
    case 'viseme': {
      const why = visemeUnavailableReason(opts.modelsDir);
      if (why) throw new LipsyncUnavailableError(why);
      return createVisemeProvider({ modelsDir: opts.modelsDir });
    }
    default:
      throw new LipsyncUnavailableError(`unknown lip-sync provider "${resolved}" (known: ${LIPSYNC_PROVIDERS.join(', ')}, auto)`);
  }
}
