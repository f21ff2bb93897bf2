// Audio as a raw file of 16-bit mono little-endian PCM (ffmpeg's `s16le`), written piece by
// piece. A book's narration is hundreds of megabytes of samples (2.3 hours at 22.05 kHz: 367 MB
// as 16-bit, twice that as floats), so the pipelines keep it here and never in memory whole;
// ffmpeg reads the file directly.
import fs from 'node:fs';
import { toPcm16 } from './wav.ts';

/** ffmpeg input arguments for a PCM file. */
export function pcmInput(pcmPath: string, sampleRate: number): string[] {
  return ['-f', 's16le', '-ar', String(sampleRate), '-ac', '1', '-i', pcmPath];
}

/** Appends to a PCM file (created empty); `length` counts the samples written. */
export class PcmWriter {
  private constructor(
    readonly path: string,
    private readonly fh: fs.promises.FileHandle,
  ) {}

  length = 0;

  static async create(pcmPath: string): Promise<PcmWriter> {
    return new PcmWriter(pcmPath, await fs.promises.open(pcmPath, 'w'));
  }

  async samples(samples: Float32Array): Promise<void> {
    await this.write(toPcm16(samples));
  }

  async silence(n: number): Promise<void> {
    if (n > 0) await this.write(Buffer.alloc(n * 2));
  }

  /** Another PCM file's samples, in pieces of 4 MiB. */
  async file(pcmPath: string): Promise<void> {
    const src = await fs.promises.open(pcmPath, 'r');
    try {
      const buf = Buffer.allocUnsafe(4 << 20);
      for (;;) {
        const { bytesRead } = await src.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        await this.write(buf.subarray(0, bytesRead - (bytesRead & 1)));
      }
    } finally {
      await src.close();
    }
  }

  /** Flushed to disk and closed. */
  async close(): Promise<void> {
    await this.fh.close();
  }

  /** Closed and removed (a failed or abandoned write). */
  async discard(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    await fs.promises.rm(this.path, { force: true });
  }

  private async write(bytes: Buffer): Promise<void> {
    let off = 0;
    while (off < bytes.length) off += (await this.fh.write(bytes, off, bytes.length - off)).bytesWritten;
    this.length += bytes.length / 2;
  }
}
