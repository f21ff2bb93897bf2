// A tiny ONNX model written by hand for the GPU server's batching tests ("tiny test model"):
// y = x * x over a float tensor [batch, length] with both dimensions dynamic.
// Encoded with a few lines of protobuf so the tests need no model file.

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

function valueInfo(name: string): number[] {
  const dims = [bytes(1, str(2, 'batch')), bytes(1, str(2, 'length'))].flat(); // TensorShapeProto.dim{dim_param}
  const tensorType = [...int(1, 1 /* FLOAT */), ...bytes(2, dims)];
  return [...str(1, name), ...bytes(2, bytes(1, tensorType))];
}

export function tinySquareModel(): Uint8Array {
  const node = [...str(1, 'x'), ...str(1, 'x'), ...str(2, 'y'), ...str(3, 'square'), ...str(4, 'Mul')];
  const graph = [...bytes(1, node), ...str(2, 'tiny_square'), ...bytes(11, valueInfo('x')), ...bytes(12, valueInfo('y'))];
  const opset = [...str(1, ''), ...int(2, 13)];
  return Uint8Array.from([...int(1, 8 /* ir_version */), ...str(2, 'lectern-tests'), ...bytes(7, graph), ...bytes(8, opset)]);
}
