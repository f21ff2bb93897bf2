// WAV (RIFF PCM) encode/decode through the wavefile library.
import wavefile from 'wavefile';

const { WaveFile } = wavefile as unknown as { WaveFile: typeof import('wavefile').WaveFile };

/**
 * Mono float samples → 16-bit PCM WAV bytes. Written directly (a 44-byte header and the
 * samples): wavefile's encoder takes seconds on long narration, and blocking the event
 * loop that long would cost a worker its queue lease.
 */
export function encodeWav(samples: Float32Array, sampleRate: number): Buffer {
  const dataBytes = samples.length * 2;
  const buf = Buffer.allocUnsafe(44 + dataBytes);
  buf.write('RIFF', 0, 'latin1');
  buf.writeUInt32LE(36 + dataBytes, 4);
  buf.write('WAVE', 8, 'latin1');
  buf.write('fmt ', 12, 'latin1');
  buf.writeUInt32LE(16, 16); // PCM fmt chunk size
  buf.writeUInt16LE(1, 20); // PCM
  buf.writeUInt16LE(1, 22); // mono
  buf.writeUInt32LE(sampleRate, 24);
  buf.writeUInt32LE(sampleRate * 2, 28); // byte rate
  buf.writeUInt16LE(2, 32); // block align
  buf.writeUInt16LE(16, 34); // bits per sample
  buf.write('data', 36, 'latin1');
  buf.writeUInt32LE(dataBytes, 40);
  const pcm = new Int16Array(buf.buffer, buf.byteOffset + 44, samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]!;
    pcm[i] = s <= -1 ? -32768 : s >= 1 ? 32767 : s < 0 ? Math.round(s * 0x8000) : Math.round(s * 0x7fff);
  }
  return buf;
}

/** WAV bytes (any PCM or float format, any channel count) → mono float samples. */
export function decodeWav(bytes: Uint8Array): { samples: Float32Array; sampleRate: number } {
  const wav = new WaveFile(bytes);
  // Read the format first: toBitDepth() rebuilds the fmt chunk.
  const { numChannels, sampleRate } = wav.fmt as { numChannels: number; sampleRate: number };
  const fmt = { numChannels, sampleRate };
  wav.toBitDepth('32f');
  const raw = wav.getSamples(false, Float64Array) as unknown as Float64Array[] | Float64Array;
  const channels = fmt.numChannels > 1 ? (raw as Float64Array[]) : [raw as Float64Array];
  const n = channels[0]!.length;
  const out = new Float32Array(n);
  for (const ch of channels) for (let i = 0; i < n; i++) out[i]! += ch[i]! / channels.length;
  return { samples: out, sampleRate: fmt.sampleRate };
}

export function isWav(bytes: Uint8Array): boolean {
  return bytes.length >= 12 && Buffer.from(bytes.subarray(0, 4)).toString('latin1') === 'RIFF' && Buffer.from(bytes.subarray(8, 12)).toString('latin1') === 'WAVE';
}
