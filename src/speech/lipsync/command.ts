// The `command` provider: an operator's own generator, run as a child process.
// The template (LECTERN_LIPSYNC_COMMAND) is a shell command line with placeholders
// {audio} {video} {output} {preset}, each replaced by a shell-quoted value, e.g.
//   my-lipsync --audio {audio} --face {video} --out {output} --quality {preset}
// The process runs in its own process group so a cancel or the time limit can kill
// the generator together with anything it started.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import { LipsyncAbortedError, type LipsyncProvider, type LipsyncRequest } from './types.ts';

export interface CommandProviderOptions {
  /** Shell command line with {audio} {video} {output} {preset} placeholders. */
  command: string;
  /** Presets the operator's generator understands; the first is the default. */
  presets?: string[];
  /** Longest one generation may run before it is killed. */
  timeoutMs?: number;
  /** How long SIGTERM gets before SIGKILL. */
  killGraceMs?: number;
}

const PLACEHOLDERS = ['audio', 'video', 'output', 'preset'] as const;

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function renderCommand(template: string, req: LipsyncRequest): string {
  const values: Record<(typeof PLACEHOLDERS)[number], string> = {
    audio: req.audioPath,
    video: req.referenceVideoPath,
    output: req.outputPath,
    preset: req.preset,
  };
  return template.replace(/\{(audio|video|output|preset)\}/g, (_m, k: keyof typeof values) => shellQuote(values[k]));
}

export function createCommandProvider(opts: CommandProviderOptions): LipsyncProvider {
  if (!opts.command.trim()) throw new Error('the command lip-sync provider needs a command (LECTERN_LIPSYNC_COMMAND)');
  if (!opts.command.includes('{output}')) {
    throw new Error('LECTERN_LIPSYNC_COMMAND must contain the {output} placeholder (where the generator writes the MP4)');
  }
  const presets = opts.presets?.length ? [...opts.presets] : ['default'];
  const timeoutMs = opts.timeoutMs ?? 30 * 60_000;
  const grace = opts.killGraceMs ?? 2000;

  return {
    name: 'command',
    presets: () => [...presets],
    generate(req, signal) {
      return new Promise<void>((resolve, reject) => {
        if (signal.aborted) return reject(new LipsyncAbortedError('cancelled before start'));
        const child = spawn('/bin/sh', ['-c', renderCommand(opts.command, req)], {
          detached: true, // own process group: kill(-pid) reaches the generator's children too
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (b: Buffer) => {
          stderr = (stderr + b.toString('utf8')).slice(-4000);
        });
        let stopReason: 'abort' | 'timeout' | null = null;
        let killTimer: NodeJS.Timeout | undefined;
        const killGroup = (sig: NodeJS.Signals) => {
          try {
            if (child.pid) process.kill(-child.pid, sig);
          } catch {
            /* already gone */
          }
        };
        const stop = (why: 'abort' | 'timeout') => {
          if (stopReason) return;
          stopReason = why;
          killGroup('SIGTERM');
          killTimer = setTimeout(() => killGroup('SIGKILL'), grace);
          killTimer.unref();
        };
        const onAbort = () => stop('abort');
        signal.addEventListener('abort', onAbort, { once: true });
        const limit = setTimeout(() => stop('timeout'), timeoutMs);
        limit.unref();
        const finish = () => {
          clearTimeout(limit);
          signal.removeEventListener('abort', onAbort);
        };
        child.on('error', (e) => {
          finish();
          reject(new Error(`lip-sync command could not start: ${e.message}`));
        });
        child.on('close', (code, sig) => {
          finish();
          if (stopReason === 'abort') return reject(new LipsyncAbortedError('lip-sync generation cancelled'));
          if (stopReason === 'timeout') return reject(new Error(`lip-sync command exceeded its time limit of ${Math.round(timeoutMs / 1000)} s`));
          if (killTimer) clearTimeout(killTimer);
          if (code !== 0) {
            const last = stderr.trim().split('\n').filter(Boolean).pop() ?? '';
            return reject(new Error(`lip-sync command failed (${sig ?? `exit ${code}`})${last ? `: ${last}` : ''}`));
          }
          fs.stat(req.outputPath).then(
            (st) => (st.size > 0 ? resolve() : reject(new Error('lip-sync command exited 0 but wrote an empty output file'))),
            () => reject(new Error('lip-sync command exited 0 but wrote no output file')),
          );
        });
      });
    },
  };
}
