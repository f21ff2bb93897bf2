// ffmpeg / ffprobe as child processes (Debian's packages, or LECTERN_FFMPEG / LECTERN_FFPROBE).
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LecternError } from '../core/errors.ts';
import { toolPaths } from './tools.ts';


export class ToolMissingError extends LecternError {
  override name = 'ToolMissingError';
  constructor(message: string) {
    super('TOOL_MISSING', message);
  }
}

export interface RunResult {
  stdout: Buffer;
  stderr: string;
}

/** Runs a program to completion; rejects with the last stderr line on a non-zero exit. */
export function runTool(
  program: string,
  args: string[],
  opts: { input?: Buffer; signal?: AbortSignal; what?: string; /** Added to this process's environment. */ env?: Record<string, string> } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], signal: opts.signal, env: opts.env ? { ...process.env, ...opts.env } : undefined });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') {
        reject(new ToolMissingError(`${opts.what ?? program} is not installed (looked for "${program}"); run "npm run setup" or set the path in the environment`));
      } else reject(e);
    });
    child.on('close', (code, sig) => {
      const stderr = Buffer.concat(err).toString('utf8');
      if (code === 0) return resolve({ stdout: Buffer.concat(out), stderr });
      const last = stderr.trim().split('\n').filter(Boolean).pop() ?? '';
      reject(new Error(`${opts.what ?? program} failed (${sig ?? `exit ${code}`}): ${last}`));
    });
    child.stdin.on('error', () => {}); // the program may exit before reading all input
    if (opts.input) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

export function ffmpeg(args: string[], opts: { input?: Buffer; signal?: AbortSignal } = {}): Promise<RunResult> {
  return runTool(toolPaths().ffmpeg, ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], { ...opts, what: 'ffmpeg' });
}

/** An ffmpeg process fed through stdin as the data is made (frames too many to hold or stage). */
export interface FfmpegInput {
  /** Resolves once the pipe takes the chunk (waits while the pipe is full); rejects if ffmpeg has ended. */
  write(chunk: Buffer): Promise<void>;
  /** Closes stdin and waits for ffmpeg to finish. */
  end(): Promise<RunResult>;
  /** Stops ffmpeg (an error elsewhere): end() then rejects. */
  kill(): void;
}

/** `onOutput`: ffmpeg writes to pipe:1 and each piece of its output is handed over as it comes (streamed encoding). */
export function ffmpegInput(args: string[], opts: { signal?: AbortSignal; onOutput?: (chunk: Buffer) => void } = {}): FfmpegInput {
  const child = spawn(toolPaths().ffmpeg, ['-hide_banner', '-loglevel', 'error', ...args], { stdio: ['pipe', 'pipe', 'pipe'], signal: opts.signal });
  const err: Buffer[] = [];
  child.stderr.on('data', (b: Buffer) => err.push(b));
  if (opts.onOutput) child.stdout.on('data', opts.onOutput);
  else child.stdout.resume();
  let exited = false;
  const done = new Promise<RunResult>((resolve, reject) => {
    child.on('error', (e: NodeJS.ErrnoException) => {
      exited = true;
      reject(e.code === 'ENOENT' ? new ToolMissingError(`ffmpeg is not installed (looked for "${toolPaths().ffmpeg}"); run "npm run setup" or set the path in the environment`) : e);
    });
    child.on('close', (code, sig) => {
      exited = true;
      const stderr = Buffer.concat(err).toString('utf8');
      if (code === 0) return resolve({ stdout: Buffer.alloc(0), stderr });
      const last = stderr.trim().split('\n').filter(Boolean).pop() ?? '';
      reject(new Error(`ffmpeg failed (${sig ?? `exit ${code}`}): ${last}`));
    });
  });
  done.catch(() => {}); // surfaced by write() or end()
  child.stdin.on('error', () => {}); // EPIPE when ffmpeg exits early: its own error is the one to report
  return {
    write(chunk) {
      if (exited || child.stdin.destroyed) return done.then(() => Promise.reject(new Error('ffmpeg ended before its input did')));
      if (child.stdin.write(chunk)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const onDrain = () => {
          child.off('close', onClose);
          resolve();
        };
        const onClose = () => {
          child.stdin.off('drain', onDrain);
          done.then(() => reject(new Error('ffmpeg ended before its input did')), reject);
        };
        child.stdin.once('drain', onDrain);
        child.once('close', onClose);
      });
    },
    end() {
      child.stdin.end();
      return done;
    },
    kill() {
      if (!exited) child.kill('SIGKILL');
    },
  };
}

export interface ProbeResult {
  durationSeconds: number;
  formatName: string;
  streams: Array<{ codec_type: string; codec_name: string; width?: number; height?: number; sample_rate?: string; channels?: number; duration?: string; avg_frame_rate?: string; nb_frames?: string }>;
  chapters: Array<{ start_time: string; end_time: string; tags?: Record<string, string> }>;
}

export async function ffprobe(file: string): Promise<ProbeResult> {
  const { stdout } = await runTool(
    toolPaths().ffprobe,
    ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', '-show_chapters', file],
    { what: 'ffprobe' },
  );
  const j = JSON.parse(stdout.toString('utf8')) as { format: { duration?: string; format_name: string }; streams: ProbeResult['streams']; chapters?: ProbeResult['chapters'] };
  return {
    durationSeconds: Number(j.format.duration ?? 'NaN'),
    formatName: j.format.format_name,
    streams: j.streams,
    chapters: j.chapters ?? [],
  };
}

/**
 * Whether bytes are an ISO base media file (MP4, M4A, M4B, MOV: an "ftyp" box first). ffmpeg
 * cannot read one from a pipe when its index (the "moov" box) follows the media, as ffmpeg's
 * own and most encoders' M4A files have it: it reads no samples and exits as if all went well.
 */
const isIsoMedia = (b: Buffer) => b.length >= 8 && b.toString('latin1', 4, 8) === 'ftyp';

/** Decodes any audio ffmpeg understands to mono float PCM at `sampleRate`. */
export async function decodeAudio(input: string | Buffer, sampleRate = 16000, signal?: AbortSignal): Promise<Float32Array> {
  if (typeof input !== 'string' && isIsoMedia(input)) {
    // from a file ffmpeg can seek in to the index, wherever it lies
    const dir = await mkdtemp(path.join(tmpdir(), 'lectern-decode-'));
    try {
      const file = path.join(dir, 'audio.m4a');
      await writeFile(file, input);
      return await decodeAudio(file, sampleRate, signal);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const src = typeof input === 'string' ? input : 'pipe:0';
  const { stdout } = await ffmpeg(['-i', src, '-ac', '1', '-ar', String(sampleRate), '-f', 'f32le', 'pipe:1'], {
    input: typeof input === 'string' ? undefined : input,
    signal,
  });
  const copy = new Uint8Array(stdout.byteLength);
  copy.set(stdout);
  return new Float32Array(copy.buffer, 0, Math.floor(copy.byteLength / 4));
}

/** Checks that ffmpeg and ffprobe run; throws ToolMissingError naming what is missing. */
export async function checkFfmpeg(): Promise<void> {
  await runTool(toolPaths().ffmpeg, ['-version'], { what: 'ffmpeg' });
  await runTool(toolPaths().ffprobe, ['-version'], { what: 'ffprobe' });
}
