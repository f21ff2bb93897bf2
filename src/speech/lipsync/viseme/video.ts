// Raw RGBA frames in and out of ffmpeg over pipes.
import { spawn, type ChildProcess } from 'node:child_process';
import { toolPaths } from '../../../media/tools.ts';
import { ffprobe, ToolMissingError } from '../../../media/ffmpeg.ts';


export interface VideoInfo {
  width: number;
  height: number;
  fps: number;
  frames: number | null;
}

/** Size after capping the height at `maxHeight` (never upscaled), both sides even for H.264. */
export function scaledSize(width: number, height: number, maxHeight: number): { width: number; height: number } {
  const h = Math.min(height, maxHeight);
  const w = Math.round((width * h) / height);
  return { width: w - (w % 2), height: h - (h % 2) };
}

export async function probeVideo(file: string): Promise<VideoInfo> {
  const p = await ffprobe(file);
  const v = p.streams.find((s) => s.codec_type === 'video');
  if (!v || !v.width || !v.height) throw new Error(`${file} has no video stream`);
  const [n, d] = (v.avg_frame_rate ?? '0/0').split('/').map(Number);
  const fps = n && d ? n / d : 25;
  return { width: v.width, height: v.height, fps, frames: v.nb_frames ? Number(v.nb_frames) : null };
}

function spawnFfmpeg(args: string[], stdio: ['pipe' | 'ignore', 'pipe' | 'ignore', 'pipe']): ChildProcess {
  const child = spawn(toolPaths().ffmpeg, ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], { stdio });
  return child;
}

function failure(child: ChildProcess, what: string): Promise<void> {
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString('utf8')).slice(-2000);
  });
  return new Promise((resolve, reject) => {
    child.on('error', (e: NodeJS.ErrnoException) =>
      reject(e.code === 'ENOENT' ? new ToolMissingError(`ffmpeg is not installed (looked for "${toolPaths().ffmpeg}"); run "npm run setup" or set LECTERN_FFMPEG`) : e),
    );
    child.on('close', (code, sig) => {
      if (code === 0) return resolve();
      const last = stderr.trim().split('\n').filter(Boolean).pop() ?? '';
      reject(new Error(`ffmpeg ${what} failed (${sig ?? `exit ${code}`})${last ? `: ${last}` : ''}`));
    });
  });
}

/**
 * Decodes up to `maxFrames` frames of `file` as RGBA at `width`×`height` and `fps`.
 * Frames are yielded as they arrive; the reader stops ffmpeg when the caller stops early.
 */
export async function* readFrames(file: string, width: number, height: number, fps: number, maxFrames: number): AsyncGenerator<Uint8Array> {
  const child = spawnFfmpeg(
    ['-i', file, '-an', '-vf', `fps=${fps},scale=${width}:${height}:flags=bicubic`, '-frames:v', String(maxFrames), '-f', 'rawvideo', '-pix_fmt', 'rgba', 'pipe:1'],
    ['ignore', 'pipe', 'pipe'],
  );
  const done = failure(child, 'decoding the reference video');
  done.catch(() => undefined);
  const size = width * height * 4;
  let buf = Buffer.allocUnsafe(size);
  let filled = 0;
  let finished = false;
  try {
    for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
      let off = 0;
      while (off < chunk.length) {
        const n = Math.min(size - filled, chunk.length - off);
        chunk.copy(buf, filled, off, off + n);
        filled += n;
        off += n;
        if (filled === size) {
          yield new Uint8Array(buf.buffer, buf.byteOffset, size);
          buf = Buffer.allocUnsafe(size);
          filled = 0;
        }
      }
    }
    finished = true;
    await done;
  } finally {
    if (!finished) child.kill('SIGKILL');
  }
}

export interface FrameWriter {
  /** Resolves once ffmpeg has taken the frame (back-pressure). */
  write(frame: Uint8Array): Promise<void>;
  /** Ends the input and waits for the MP4. */
  finish(): Promise<void>;
  /** Stops ffmpeg at once (cancellation). */
  kill(): void;
}

/** H.264 (yuv420p, +faststart) with the narration as AAC; the video ends with the narration. */
export function writeMp4(outputPath: string, width: number, height: number, fps: number, audioPath: string, x264Preset: string, crf: number): FrameWriter {
  const child = spawnFfmpeg(
    [
      '-y', '-f', 'rawvideo', '-pix_fmt', 'rgba', '-s', `${width}x${height}`, '-r', String(fps), '-i', 'pipe:0',
      '-i', audioPath,
      '-map', '0:v:0', '-map', '1:a:0',
      '-c:v', 'libx264', '-preset', x264Preset, '-crf', String(crf), '-pix_fmt', 'yuv420p',
      '-c:a', 'aac', '-b:a', '128k', '-shortest', '-movflags', '+faststart', outputPath,
    ],
    ['pipe', 'ignore', 'pipe'],
  );
  const done = failure(child, 'encoding the lip-synced video');
  done.catch(() => undefined);
  const stdin = child.stdin!;
  stdin.on('error', () => undefined); // a dying ffmpeg surfaces through `done`
  return {
    write(frame) {
      return new Promise((resolve, reject) => {
        if (child.exitCode !== null) return reject(new Error('ffmpeg encoder exited early'));
        if (stdin.write(frame)) resolve();
        else stdin.once('drain', resolve);
        done.catch(reject);
      });
    },
    async finish() {
      stdin.end();
      await done;
    },
    kill() {
      child.kill('SIGKILL');
    },
  };
}
