// WAV (RIFF PCM) encode/decode through the wavefile library.
import wavefile from 'wavefile';

const { WaveFile } = wavefile as unknown as { WaveFile: typeof import('wavefile').WaveFile };

/**
 * Mono float samples → 16-bit PCM WAV bytes. Written directly (a 44-byte header and the
 * samples): wavefile's encoder takes seconds on long narration, and blocking the event
 * loop that long would cost a worker its queue lease.
 */
export function encodeWav(samples: Float32Array, sampleRate: number): Buffer {
  const buf = Buffer.allocUnsafe(44 + samples.length * 2);
  wavHeader(sampleRate, samples.length * 2).copy(buf, 0);
  toPcm16(samples, buf.subarray(44));
  return buf;
}

/**
 * The 44-byte header of a mono 16-bit PCM WAV. `dataBytes` null: a stream of unknown
 * length, whose sizes are the 0xFFFFFFFF that players read as "until the end".
 */
export function wavHeader(sampleRate: number, dataBytes: number | null): Buffer {
  const buf = Buffer.alloc(44);
  buf.write('RIFF', 0, 'latin1');
  buf.writeUInt32LE(dataBytes === null ? 0xffffffff : 36 + dataBytes, 4);
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
  buf.writeUInt32LE(dataBytes === null ? 0xffffffff : dataBytes, 40);
  return buf;
}

/** Float samples → 16-bit little-endian PCM (into `out` when given, else a new buffer). */
export function toPcm16(samples: Float32Array, out: Buffer = Buffer.allocUnsafe(samples.length * 2)): Buffer {
  const aligned = (out.byteOffset & 1) === 0;
  const pcm = aligned ? new Int16Array(out.buffer, out.byteOffset, samples.length) : null; // little-endian hosts only, as everywhere here
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]!;
    const v = s <= -1 ? -32768 : s >= 1 ? 32767 : s < 0 ? Math.round(s * 0x8000) : Math.round(s * 0x7fff);
    if (pcm) pcm[i] = v;
    else out.writeInt16LE(v, i * 2);
  }
  return out;
}

/**
 * 16-bit PCM and 32-bit float WAV (the formats engines write) read directly: wavefile's
 * generic path took 0.5 s for 5 s of speech here. Null for any other layout. A data chunk
 * whose size runs past the end (a streamed WAV's placeholder) is read to the end.
 */
function decodeCommonWav(bytes: Uint8Array): { samples: Float32Array; sampleRate: number } | null {
  if (!isWav(bytes)) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let format = 0;
  let channels = 0;
  let sampleRate = 0;
  let bits = 0;
  for (let pos = 12; pos + 8 <= bytes.length; ) {
    const id = Buffer.from(bytes.subarray(pos, pos + 4)).toString('latin1');
    const size = view.getUint32(pos + 4, true);
    const body = pos + 8;
    if (id === 'fmt ' && size >= 16) {
      format = view.getUint16(body, true);
      channels = view.getUint16(body + 2, true);
      sampleRate = view.getUint32(body + 4, true);
      bits = view.getUint16(body + 14, true);
      if (format === 0xfffe && size >= 26) format = view.getUint16(body + 24, true); // WAVE_FORMAT_EXTENSIBLE: the sub-format
    } else if (id === 'data') {
      const pcm16 = format === 1 && bits === 16;
      const float32 = format === 3 && bits === 32;
      if ((!pcm16 && !float32) || channels < 1 || sampleRate < 1) return null;
      const frameBytes = (bits / 8) * channels;
      const frames = Math.floor(Math.min(size, bytes.length - body) / frameBytes);
      const out = new Float32Array(frames);
      for (let i = 0, o = body; i < frames; i++) {
        let sum = 0;
        for (let c = 0; c < channels; c++, o += bits / 8) sum += pcm16 ? view.getInt16(o, true) / 32768 : view.getFloat32(o, true);
        out[i] = sum / channels;
      }
      return { samples: out, sampleRate };
    }
    pos = body + size + (size & 1);
  }
  return null;
}

/** WAV bytes (any PCM or float format, any channel count) → mono float samples. */
export function decodeWav(bytes: Uint8Array): { samples: Float32Array; sampleRate: number } {
  const common = decodeCommonWav(bytes);
  if (common) return common;
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
