// Encodes synthesized PCM in a backend's output format (WAV in-process, MP3/Opus via ffmpeg).
import { ffmpeg } from '../media/ffmpeg.ts';
import { encodeWav } from '../media/wav.ts';

export const CONTENT_TYPES: Record<string, string> = {
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
};

export function contentTypeFor(format: string): string {
  const t = CONTENT_TYPES[format];
  if (!t) throw new Error(`unsupported output format "${format}" (known: ${Object.keys(CONTENT_TYPES).join(', ')})`);
  return t;
}

export async function encodeAudio(samples: Float32Array, sampleRate: number, format: string): Promise<Uint8Array> {
  const wav = encodeWav(samples, sampleRate);
  if (format === 'wav') return wav;
  const args = format === 'mp3' ? ['-f', 'mp3', '-b:a', '64k'] : format === 'opus' ? ['-c:a', 'libopus', '-b:a', '32k', '-f', 'ogg'] : null;
  if (!args) throw new Error(`unsupported output format "${format}"`);
  const { stdout } = await ffmpeg(['-f', 'wav', '-i', 'pipe:0', ...args, 'pipe:1'], { input: wav });
  return stdout;
}
