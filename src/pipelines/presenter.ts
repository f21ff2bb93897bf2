// Where the lip-sync pipeline's presenter clips are made: on a GPU server (through the
// process's GPU client and its job protocol, polling with the job's cancel flag) when
// LECTERN_GPU_SERVER_URL is set, otherwise here with a lip-sync provider from
// speech/lipsync/providers.ts. Both stop a clip in flight when the job's cancel flag
// appears, and both report that as JobCancelled.
import { LipsyncCancelled } from '../gpu-client/errors.ts';
import type { GpuClient } from '../gpu-client/index.ts';
import type { Logger } from '../log.ts';
import { createLipsyncProvider } from '../speech/lipsync/providers.ts';
import { LipsyncAbortedError } from '../speech/lipsync/types.ts';
import { JobCancelled, type PresenterGenerator } from './types.ts';

/** How often a local generation looks at the job's cancel flag (the provider then stops at its next frame batch). */
const LOCAL_CANCEL_POLL_MS = 250;

export interface PresenterHandle extends PresenterGenerator {
  close(): Promise<void>;
}

/** Lip-sync settings (ServiceConfig.lipsync): the local provider, and how often a GPU server's job is polled. */
export interface LipsyncSettings {
  provider: string;
  command: string | null;
  commandPresets: string[];
  commandTimeoutMs: number;
  pollIntervalMs: number;
}

/** What presenter clips are made with. */
export interface PresenterSettings {
  /** The process's GPU client (clips are made on its servers), or null: made here with a local provider. */
  gpu: GpuClient | null;
  modelsDir: string;
  lipsync: LipsyncSettings;
}

export async function createPresenterGenerator(config: PresenterSettings, log: Logger): Promise<PresenterHandle> {
  if (config.gpu) return remotePresenter(config.gpu, config.lipsync, log);
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

/** Clips on the GPU servers of `client`: shared with the rest of the process, so it is not closed here. */
function remotePresenter(client: GpuClient, lipsync: LipsyncSettings, log: Logger): PresenterHandle {
  const provider = lipsync.provider === 'auto' ? undefined : lipsync.provider;
  return {
    where: `remote:${client.servers().map((s) => s.url).join(',')}`,
    async generate(req, shouldCancel, signal) {
      try {
        await client.generateLipsync({
          audioPath: req.audioPath,
          referenceVideoPath: req.referenceVideoPath,
          outputPath: req.outputPath,
          provider,
          lipsyncPreset: req.preset,
          pollIntervalMs: lipsync.pollIntervalMs,
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
    close: async () => undefined,
  };
}
