// Builds build/soundswallower-simd.wasm: soundswallower's WebAssembly decoder (npm, MIT) with
// its Gaussian scorer rewritten to use WebAssembly SIMD. The `hmm` aligner loads it instead of
// the package's own build (src/speech/align/soundswallower-wasm.ts).
//
// Why: a CPU profile of the align phase puts half to two thirds of it in one function,
// PocketSphinx's ptm_mgau frame evaluation (ptm_mgau.c: eval_topn and eval_cb inlined), compiled
// without SIMD. eval_cb scores every density of a codebook and stops a density as soon as its
// running score falls under the frame's current n-th best; with topn 2 that bound is tight and a
// density stops after 6 of its 13 dimensions on average, at an unpredictable point, so the scalar
// loop is mostly branch mispredictions and loop control. The rewrite scores all 13 dimensions
// without a data-dependent branch: (x - mean)^2 * var four lanes at a time, then subtracted from
// the density's score one lane after another, in the original order. Every product and every
// subtraction is the same IEEE single-precision operation on the same operands as before, so the
// scores, the n-best lists and therefore the alignments are bit for bit those of the stock build
// (test/hmm-simd.test.ts checks it); stopping early never changed a result, as a score only falls.
//
// The patch is made for one build: soundswallower 0.6.3's soundswallower.node.wasm, disassembled
// with wabt 1.0.39 (npm `wabt`, the version package.json pins). Any other input stops the script
// with a message instead of patching blind. Run by scripts/build-native.sh (npm install, setup).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const sha256 = (data) => createHash('sha256').update(data).digest('hex');

const SOURCE_SHA256 = '02ffea996ee62bec979513325302ecfbbec96c68e95c5b3171094f47c7b27229';
/** ptm_mgau_frame_eval, with eval_topn and eval_cb inlined into it */
const FUNCTION = 431;

/** x -= sum over 4 lanes of var*(obs-mean)^2, lane by lane; obs/mean/var pointers in the given locals; 28 is the added v128 scratch */
const fourDims = (score, obs, mean, variance) => `
local.get ${obs}
v128.load align=4
local.get ${mean}
v128.load align=4
f32x4.sub
local.tee 28
local.get 28
f32x4.mul
local.get ${variance}
v128.load align=4
f32x4.mul
local.set 28
local.get ${score}
local.get 28
f32x4.extract_lane 0
f32.sub
local.get 28
f32x4.extract_lane 1
f32.sub
local.get 28
f32x4.extract_lane 2
f32.sub
local.get 28
f32x4.extract_lane 3
f32.sub
local.set ${score}`;

const advance = (local, bytes) => `
local.get ${local}
i32.const ${bytes}
i32.add
local.set ${local}`;

/**
 * Each patch replaces lines [from, to] (1-based, within the function's text) whose text hashes
 * to `sha256`. Locals of the function: 7 var pointer, 9 obs pointer, 10 mean pointer, 8 the
 * dimension, 15 the dimension count, 21 its remainder mod 4, 19 the frame's features, 24 the
 * score, 16 "all dimensions done"; 27 (f32) and 28 (v128) are added by the first patch.
 */
const PATCHES = [
  {
    what: 'two scratch locals (f32, v128)',
    from: 2,
    to: 2,
    sha256: '0b4a5830c8c55bd6221ed1bfb4e7c3918583db5f33d8da5fb19783e14ef204ab',
    replace: (lines) => [lines[0].replace(/f32 f32 i64\)$/, 'f32 f32 i64 f32 v128)')],
  },
  {
    what: 'eval_topn: four dimensions of a kept density at once',
    from: 279,
    to: 328,
    sha256: '8a4bf246d28237e483f481373ee2c510fd0d8f594a33909724b4409017df5431',
    replace: () => fourDims(24, 9, 10, 7).trim().split('\n'),
  },
  {
    what: 'eval_cb: every dimension of a density, with no early stop',
    from: 611,
    to: 739,
    sha256: '5a8ac4a366f488272af7f288f3f71dda700c36e269a4afb07785c97d7e051a03',
    replace: () =>
      `
i32.const 0
local.set 8
local.get 19
local.set 9
block
loop
local.get 8
local.get 21
i32.ge_s
br_if 1
local.get 8
i32.const 1
i32.add
local.set 8
local.get 24
local.get 7
f32.load
local.get 9
f32.load
local.get 10
f32.load
f32.sub
local.tee 27
local.get 27
f32.mul
f32.mul
f32.sub
local.set 24
${advance(7, 4)}
${advance(9, 4)}
${advance(10, 4)}
br 0
end
end
block
loop
local.get 8
local.get 15
i32.ge_s
br_if 1
${fourDims(24, 9, 10, 7)}
${advance(8, 4)}
${advance(7, 16)}
${advance(9, 16)}
${advance(10, 16)}
br 0
end
end
i32.const 1
local.set 16`
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean),
  },
];

export async function buildSimd(source, out) {
  const input = readFileSync(source);
  if (sha256(input) !== SOURCE_SHA256) {
    throw new Error(`${source} is not the soundswallower 0.6.3 build this patch is for (sha256 ${sha256(input)}); update scripts/build-soundswallower-simd.mjs for it`);
  }
  const wabt = await require('wabt')();
  const text = wabt.readWasm(input, { simd: true }).toText({});
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`  (func (;${FUNCTION};)`));
  if (start < 0) throw new Error(`function ${FUNCTION} not found in the disassembly`);
  // later patches first, so that earlier line numbers still hold
  for (const p of [...PATCHES].sort((a, b) => b.from - a.from)) {
    const at = start + p.from - 1;
    const old = lines.slice(at, start + p.to);
    if (sha256(old.join('\n')) !== p.sha256) throw new Error(`patch "${p.what}": lines ${p.from}-${p.to} of function ${FUNCTION} are not what the patch expects (wabt ${require('wabt/package.json').version}?)`);
    lines.splice(at, old.length, ...p.replace(old));
  }
  const module = wabt.parseWat('soundswallower-simd.wat', lines.join('\n'), { simd: true });
  module.validate();
  const binary = Buffer.from(module.toBinary({}).buffer);
  await WebAssembly.compile(binary); // V8 accepts it (SIMD included)
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, binary);
  writeFileSync(`${out.replace(/\.wasm$/, '')}.json`, `${JSON.stringify({ source_sha256: SOURCE_SHA256, sha256: sha256(binary), wabt: require('wabt/package.json').version }, null, 2)}\n`);
  return binary.length;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const source = path.join(path.dirname(require.resolve('soundswallower')), 'soundswallower.node.wasm');
  const out = path.join(root, 'build', 'soundswallower-simd.wasm');
  const bytes = await buildSimd(source, out);
  console.log(`lectern: soundswallower SIMD scorer built (${path.relative(root, out)}, ${bytes} bytes)`);
}
