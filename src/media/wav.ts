// WAV (RIFF PCM) encode/decode through the wavefile library.
import wavefile from 'wavefile';

const { WaveFile } = wavefile as unknown as { WaveFile: typeof import('wavefile').WaveFile };

/** Mono float samples → 16-bit PCM WAV bytes. */
export function encodeWav(samples: Float32Array, sampleRate: number): Buffer {
  const pcm = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!));
    pcm[i] = s < 0 ? Math.round(s * 0x8000) : Math.round(s * 0x7fff);
  }
  const wav = new WaveFile();
  wav.fromScratch(1, sampleRate, '16', pcm);
  return Buffer.from(wav.toBuffer());
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
