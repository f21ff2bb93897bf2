// Piper's phoneme durations, which its exported graph computes but does not return.
// A VITS voice predicts how many latent frames each phoneme id lasts and rounds them up
// with one `Ceil` node (output [1,1,T]; each frame is `hop` output samples, and the sum
// is the output length exactly). withDurationsOutput() adds that tensor to the graph's
// outputs by editing the ONNX protobuf (no weights change, nothing else is rewritten), so
// onnxruntime returns it beside the audio; wordSpans() turns it into word boundaries,
// exact for the audio the same run produced.
//
// Protobuf fields used (onnx.proto): ModelProto.graph = 7; GraphProto.node = 1,
// GraphProto.output = 12; NodeProto.output = 2, NodeProto.op_type = 4;
// ValueInfoProto.name = 1, .type = 2; TypeProto.tensor_type = 1; Tensor.elem_type = 1.

interface Field {
  no: number;
  wire: number;
  /** Byte range of the whole field (tag included) and of its payload. */
  from: number;
  to: number;
  payload: [number, number];
}

function varint(buf: Uint8Array, at: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (;;) {
    const b = buf[at++];
    if (b === undefined) throw new Error('truncated protobuf varint');
    v += (b & 0x7f) * mul;
    if (b < 0x80) return [v, at];
    mul *= 128;
  }
}

function fields(buf: Uint8Array, from = 0, to = buf.length): Field[] {
  const out: Field[] = [];
  let at = from;
  while (at < to) {
    const start = at;
    const [tag, a] = varint(buf, at);
    at = a;
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    let payload: [number, number];
    if (wire === 0) {
      const [, b] = varint(buf, at);
      payload = [at, b];
      at = b;
    } else if (wire === 1) {
      payload = [at, at + 8];
      at += 8;
    } else if (wire === 5) {
      payload = [at, at + 4];
      at += 4;
    } else if (wire === 2) {
      const [len, b] = varint(buf, at);
      payload = [b, b + len];
      at = b + len;
    } else throw new Error(`unsupported protobuf wire type ${wire}`);
    if (at > to) throw new Error('truncated protobuf field');
    out.push({ no, wire, from: start, to: at, payload });
  }
  return out;
}

function encodeVarint(v: number): number[] {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

function lengthDelimited(no: number, body: Uint8Array): Uint8Array {
  const head = [...encodeVarint(no * 8 + 2), ...encodeVarint(body.length)];
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

const text = (buf: Uint8Array, f: Field) => new TextDecoder().decode(buf.subarray(f.payload[0], f.payload[1]));

function graphOf(model: Uint8Array): Field {
  const graph = fields(model).find((f) => f.no === 7 && f.wire === 2);
  if (!graph) throw new Error('not an ONNX model (no graph)');
  return graph;
}

/** The name of the durations tensor: the output of the graph's only `Ceil` node. */
export function findDurationsTensor(model: Uint8Array): string {
  const g = graphOf(model);
  const ceils: string[] = [];
  for (const node of fields(model, ...g.payload).filter((f) => f.no === 1 && f.wire === 2)) {
    const nf = fields(model, ...node.payload);
    const op = nf.find((f) => f.no === 4);
    if (op && text(model, op) === 'Ceil') {
      const out = nf.find((f) => f.no === 2);
      if (out) ceils.push(text(model, out));
    }
  }
  if (ceils.length !== 1) throw new Error(`expected one Ceil node (VITS durations) in the voice's graph, found ${ceils.length}`);
  return ceils[0]!;
}

/** The model with its durations tensor added as a float graph output; `output` names it. */
export function withDurationsOutput(model: Uint8Array): { model: Uint8Array; output: string } {
  const name = findDurationsTensor(model);
  const g = graphOf(model);
  const graphOutputs = fields(model, ...g.payload).filter((f) => f.no === 12);
  if (graphOutputs.some((f) => fields(model, ...f.payload).some((x) => x.no === 1 && text(model, x) === name))) return { model, output: name };
  const FLOAT = 1;
  const tensorType = new Uint8Array([0x08, FLOAT]); // elem_type, no shape
  const valueInfo = new Uint8Array([...lengthDelimited(1, new TextEncoder().encode(name)), ...lengthDelimited(2, lengthDelimited(1, tensorType))]);
  const graphBody = new Uint8Array(g.payload[1] - g.payload[0] + valueInfo.length + 16);
  const extra = lengthDelimited(12, valueInfo);
  graphBody.set(model.subarray(...g.payload));
  graphBody.set(extra, g.payload[1] - g.payload[0]);
  const newGraph = lengthDelimited(7, graphBody.subarray(0, g.payload[1] - g.payload[0] + extra.length));
  const out = new Uint8Array(g.from + newGraph.length + (model.length - g.to));
  out.set(model.subarray(0, g.from));
  out.set(newGraph, g.from);
  out.set(model.subarray(g.to), g.from + newGraph.length);
  return { model: out, output: name };
}

export interface WordSpan {
  /** Index of the word among the phoneme string's words (space/punctuation separated). */
  word: number;
  /** Seconds from the start of this item's audio. */
  start: number;
  end: number;
  /** Start of each of the word's phonemes (seconds, the first is `start`): where a word eSpeak merged ("ʌvðə") may be cut. */
  phonemeStarts: number[];
}

/**
 * Word spans from one item's phoneme ids and their durations (frames of `hop` samples).
 * A word is a run of phoneme ids between separators (`separatorIds`: the space and the
 * punctuation ids); it starts where its first phoneme starts and ends where its last phoneme
 * ends. The pad id after each phoneme (VITS's blank) belongs to the word only when phonemes
 * of the same word lie on both sides; BOS/EOS and the pads around separators belong to no word.
 */
export function wordSpans(ids: number[], durations: ArrayLike<number>, opts: { hop: number; sampleRate: number; padId: number; separatorIds: Set<number>; edgeIds: Set<number> }): WordSpan[] {
  if (durations.length < ids.length) throw new Error(`durations for ${durations.length} of ${ids.length} phoneme ids`);
  const frameS = opts.hop / opts.sampleRate;
  const spans: WordSpan[] = [];
  let frame = 0;
  let current: { start: number; end: number; starts: number[] } | null = null;
  const close = () => {
    if (current) spans.push({ word: spans.length, start: current.start * frameS, end: current.end * frameS, phonemeStarts: current.starts.map((f) => f * frameS) });
    current = null;
  };
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!;
    const d = Math.max(0, Math.round(Number(durations[i])));
    if (opts.separatorIds.has(id) || opts.edgeIds.has(id)) close();
    else if (id !== opts.padId) {
      if (!current) current = { start: frame, end: frame + d, starts: [frame] };
      else {
        current.end = frame + d;
        current.starts.push(frame);
      }
    }
    frame += d;
  }
  close();
  return spans;
}

/** The ids wordSpans() needs from a voice's phoneme map: pad, word separators (space, punctuation), BOS/EOS. */
export function spanIds(phonemeIdMap: Record<string, number[]>): { padId: number; separatorIds: Set<number>; edgeIds: Set<number> } {
  const ids = (chars: string[]) => new Set(chars.flatMap((c) => phonemeIdMap[c] ?? []));
  return {
    padId: phonemeIdMap._?.[0] ?? 0,
    separatorIds: ids([' ', '!', "'", '(', ')', ',', '-', '.', ':', ';', '?', '"', '¡', '¿', '—', '…', '«', '»', '“', '”']),
    edgeIds: ids(['^', '$']),
  };
}
