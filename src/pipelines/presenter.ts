// Where the lip-sync pipeline's presenter clips are made: on a GPU server (through the GPU
// client's job protocol, polling with the job's cancel flag) when LECTERN_GPU_SERVER_URL is
// set, otherwise here with a lip-sync provider from speech/lipsync/providers.ts. Both stop a clip in flight
// when the job's cancel flag appears, and both report that as JobCancelled.
import { createGpuClient } from '../gpu-client/index.ts';
import { LipsyncCancelled } from '../gpu-client/errors.ts';
import type { Logger } from '../log.ts';
import { createLipsyncProvider } from '../speech/lipsync/providers.ts';
import { LipsyncAbortedError } from '../speech/lipsync/types.ts';
import { JobCancelled, type PresenterGenerator } from './types.ts';

/** How often a local generation looks at the job's cancel flag (the provider then stops at its next frame batch). */
const LOCAL_CANCEL_POLL_MS = 250;

export interface PresenterHandle extends PresenterGenerator {
  close(): Promise<void>;
}

/** What presenter clips are made with (the service config's fields of these names). */
export interface PresenterSettings {
  gpuServerUrls: string[];
  gpuServerToken: string | null;
  modelsDir: string;
  lipsync: { provider: string; command: string | null; commandPresets: string[]; commandTimeoutMs: number; pollIntervalMs: number };
}

export async function createPresenterGenerator(config: PresenterSettings, log: Logger): Promise<PresenterHandle> {
  if (config.gpuServerUrls.length > 0) return remotePresenter(config, log);
  return localPresenter(config);
}

async function localPresenter(config: PresenterSettings): Promise<PresenterHandle> {
  const provider = await createLipsyncProvider(config.lipsync.provider, {
    modelsDir: config.modelsDir,
    device: 'cpu',
    command: config.lipsync.command,
    commandPresets: config.lipsync.commandPresets,
    commandTimeoutMs: config.lipsync.commandTimeoutMs,
  });
  return {
    where: `local:${provider.name}`,
    async generate(req, shouldCancel, signal) {
      const preset = req.preset ?? provider.presets()[0]!;
      if (!provider.presets().includes(preset)) {
        throw new Error(`unknown lipsync_preset "${preset}" for the ${provider.name} lip-sync provider (known: ${provider.presets().join(', ')})`);
      }
      if (await shouldCancel()) throw new JobCancelled();
      const abort = new AbortController();
      let stopRequested = false;
      const onShutdown = () => abort.abort();
      signal.addEventListener('abort', onShutdown, { once: true });
      const timer = setInterval(() => {
        void shouldCancel().then(
          (c) => {
            if (c && !abort.signal.aborted) {
              stopRequested = true;
              abort.abort();
            }
          },
          () => undefined,
        );
      }, LOCAL_CANCEL_POLL_MS);
      try {
        await provider.generate({ audioPath: req.audioPath, referenceVideoPath: req.referenceVideoPath, outputPath: req.outputPath, preset }, abort.signal);
      } catch (e) {
        if (e instanceof LipsyncAbortedError && stopRequested) throw new JobCancelled();
        throw e;
      } finally {
        clearInterval(timer);
        signal.removeEventListener('abort', onShutdown);
      }
    },
    close: async () => undefined,
  };
}

function remotePresenter(config: PresenterSettings, log: Logger): PresenterHandle {
  const client = createGpuClient({ urls: config.gpuServerUrls, token: config.gpuServerToken ?? undefined, log });
  const provider = config.lipsync.provider === 'auto' ? undefined : config.lipsync.provider;
  return {
    where: `remote:${config.gpuServerUrls.join(',')}`,
    async generate(req, shouldCancel, signal) {
      try {
        await client.generateLipsync({
          audioPath: req.audioPath,
          referenceVideoPath: req.referenceVideoPath,
          outputPath: req.outputPath,
          provider,
          lipsyncPreset: req.preset,
          pollIntervalMs: config.lipsync.pollIntervalMs,
          shouldCancel,
          signal,
          log,
        });
      } catch (e) {
        // A worker shutting down is not a stop: the task goes back to the queue.
        if (e instanceof LipsyncCancelled && !e.byServer && !signal.aborted) throw new JobCancelled();
        throw e;
      }
    },
    close: async () => client.close(),
  };
}
