// Raw yuv420p frames with their own timestamps in a streamed Matroska file, to pipe a
// variable-frame-rate picture sequence into one ffmpeg process. A plain rawvideo pipe has
// a constant rate only (a word held for 10 frames would be 10 frames to send and encode);
// Matroska carries a timestamp per frame, and ffmpeg's demuxer reads `V_UNCOMPRESSED`
// with an `I420` colour space as yuv420p. Written for a pipe: the segment has an unknown
// size and there is no index; each frame is a cluster of its own (a SimpleBlock's timestamp
// is relative to its cluster and only 16 bits).

/** EBML IDs already carry their length marker: written as their bytes. */
function id(n: number): Buffer {
  const b: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) b.unshift(v & 255);
  return Buffer.from(b);
}

/** Sizes as 8-byte vints: simple, and any size fits. */
function size(n: number): Buffer {
  const b = Buffer.alloc(8);
  b[0] = 1;
  b.writeUIntBE(n, 2, 6);
  return b;
}

function el(i: number, ...parts: Array<Buffer | string>): Buffer {
  const body = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : p)));
  return Buffer.concat([id(i), size(body.length), body]);
}

function uint(i: number, v: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(v));
  return el(i, b);
}

/** Timestamps in microseconds (TimestampScale 1000 ns): well under a frame's rounding. */
const TIMESTAMP_SCALE_NS = 1000;

/** The file's start: EBML header, an unknown-size segment, its info and the one video track. */
export function mkvRawHeader(width: number, height: number, fps: number): Buffer {
  return Buffer.concat([
    el(0x1a45dfa3, uint(0x4286, 1), uint(0x42f7, 1), uint(0x42f2, 4), uint(0x42f3, 8), el(0x4282, 'matroska'), uint(0x4287, 4), uint(0x4285, 2)),
    id(0x18538067),
    Buffer.from([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), // unknown size
    el(0x1549a966, uint(0x2ad7b1, TIMESTAMP_SCALE_NS), el(0x4d80, 'lectern'), el(0x5741, 'lectern')),
    el(
      0x1654ae6b,
      el(
        0xae,
        uint(0xd7, 1), // TrackNumber
        uint(0x73c5, 1), // TrackUID
        uint(0x83, 1), // TrackType: video
        uint(0x9c, 0), // FlagLacing
        // DefaultDuration: one frame, so the last picture lasts a frame, not zero.
        uint(0x23e383, Math.round(1e9 / fps)),
        el(0x86, 'V_UNCOMPRESSED'),
        el(0xe0, uint(0xb0, width), uint(0xba, height), el(0x2eb524, 'I420')),
      ),
    ),
  ]);
}

/**
 * The bytes before one frame's pixels: a cluster at `seconds` holding one keyframe
 * SimpleBlock of `frameBytes` (the caller writes the pixels right after, unchanged, so a
 * 1.4 MB frame is never copied into a bigger buffer).
 */
export function mkvRawFramePrefix(seconds: number, frameBytes: number): Buffer {
  const block = Buffer.concat([id(0xa3), size(4 + frameBytes), Buffer.from([0x81, 0, 0, 0x80])]);
  const ts = uint(0xe7, Math.round((seconds * 1e9) / TIMESTAMP_SCALE_NS));
  return Buffer.concat([id(0x1f43b675), size(ts.length + block.length + frameBytes), ts, block]);
}
