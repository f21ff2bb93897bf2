// A tiny Wav2Lip-shaped ONNX graph written by hand for the onnx lip-sync provider's tests
// ("tiny test lip-sync model"): inputs mel [N,1,80,16] and face [N,6,96,96], output
// [N,3,96,96] = the masked face (channels 0–2: upper half kept, lower half blank) plus
// 0.1·mean(mel) + 0.4 everywhere. So the generated lower face is dark in silence and brightens
// with the mel energy, and the upper half reproduces the input: enough to check crop, mask,
// mel windows, resize and paste-back without a real model.

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
const field = (num: number, wire: number) => varint((num << 3) | wire);
const int = (num: number, v: number) => [...field(num, 0), ...varint(v)];
const bytes = (num: number, b: number[]) => [...field(num, 2), ...varint(b.length), ...b];
const str = (num: number, s: string) => bytes(num, [...Buffer.from(s, 'utf8')]);

function valueInfo(name: string, dims: Array<number | string>): number[] {
  const d = dims.flatMap((x) => bytes(1, typeof x === 'number' ? int(1, x) : str(2, x)));
  const tensorType = [...int(1, 1 /* FLOAT */), ...bytes(2, d)];
  return [...str(1, name), ...bytes(2, bytes(1, tensorType))];
}

function int64Tensor(name: string, values: number[]): number[] {
  const raw = Buffer.alloc(values.length * 8);
  values.forEach((v, i) => raw.writeBigInt64LE(BigInt(v), i * 8));
  return [...int(1, values.length), ...int(2, 7 /* INT64 */), ...str(8, name), ...bytes(9, [...raw])];
}

function floatScalar(name: string, v: number): number[] {
  const raw = Buffer.alloc(4);
  raw.writeFloatLE(v);
  return [...int(2, 1 /* FLOAT */), ...str(8, name), ...bytes(9, [...raw])];
}

function node(op: string, inputs: string[], outputs: string[], attrs: number[][] = []): number[] {
  return [...inputs.flatMap((i) => str(1, i)), ...outputs.flatMap((o) => str(2, o)), ...str(4, op), ...attrs.flatMap((a) => bytes(5, a))];
}

const intsAttr = (name: string, v: number[]) => [...str(1, name), ...v.flatMap((x) => int(8, x)), ...int(20, 7 /* INTS */)];
const intAttr = (name: string, v: number) => [...str(1, name), ...int(3, v), ...int(20, 2 /* INT */)];

export function tinyLipsyncModel(): Uint8Array {
  const nodes = [
    node('Slice', ['face', 'starts', 'ends', 'axes'], ['masked']),
    node('ReduceMean', ['mel'], ['level'], [intsAttr('axes', [1, 2, 3]), intAttr('keepdims', 1)]),
    node('Mul', ['level', 'gain'], ['scaled']),
    node('Add', ['scaled', 'bias'], ['offset']),
    node('Add', ['masked', 'offset'], ['pred']),
  ];
  const inits = [int64Tensor('starts', [0]), int64Tensor('ends', [3]), int64Tensor('axes', [1]), floatScalar('gain', 0.1), floatScalar('bias', 0.4)];
  const graph = [
    ...nodes.flatMap((n) => bytes(1, n)),
    ...str(2, 'tiny_lipsync'),
    ...inits.flatMap((t) => bytes(5, t)),
    ...bytes(11, valueInfo('mel', ['N', 1, 80, 16])),
    ...bytes(11, valueInfo('face', ['N', 6, 96, 96])),
    ...bytes(12, valueInfo('pred', ['N', 3, 96, 96])),
  ];
  const opset = [...str(1, ''), ...int(2, 13)];
  return Uint8Array.from([...int(1, 8 /* ir_version */), ...str(2, 'lectern-tests'), ...bytes(7, graph), ...bytes(8, opset)]);
}
