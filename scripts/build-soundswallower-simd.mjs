// Builds build/soundswallower-simd.wasm: soundswallower's WebAssembly decoder (npm, MIT) with
// two of its hot loops rewritten, the Gaussian scorer (in WebAssembly SIMD) and the grammar
// history's sweep at the end of each frame (historyEndFrame, below). The `hmm` aligner loads it
// instead of the package's own build (src/speech/align/soundswallower-wasm.ts). On the bench
// hour's 90 segments it decodes in 0.48x the CPU, every word timed identically.
//
// The scorer. A CPU profile of the align phase puts half to two thirds of it in one function,
// PocketSphinx's ptm_mgau frame evaluation (ptm_mgau.c: eval_topn and eval_cb inlined), compiled
// without SIMD. eval_cb scores every density of a codebook and stops a density as soon as its
// running score falls under the frame's current n-th best; with topn 2 that bound is tight and a
// density stops after 6 of its 13 dimensions on average, at an unpredictable point, so the scalar
// loop is mostly branch mispredictions and loop control. The rewrite scores four densities at
// once, a lane each, on all 13 dimensions with no data-dependent branch (four densities' rows
// transposed in registers into per-dimension columns), then hands each density in turn to
// eval_cb's own n-best insertion. Each lane performs exactly one density's IEEE single-precision
// operations, on the same operands and in the same order as the scalar code, so the scores, the
// n-best lists and therefore the alignments are bit for bit those of the stock build
// (test/hmm-simd.test.ts checks it); stopping early never changed a result, as a score only falls.
// Tried and not kept: one density at a time, four dimensions per vector (the lanes subtracted in
// order: exact, 8 % slower on the bench hour's align phase than this); the lanes summed as a
// vector and subtracted once (not exact, and slower than either).
//
// Round 21: the transposes go. The first frame a model scores makes a column copy of its means
// and variances (four densities' values of one dimension side by side, `columnCopyFunctions`),
// kept per model and freed with it; the scan then loads a dimension of four densities with one
// instruction and scores two groups of four side by side (`columnDensities`), and the senone
// scores' final normalisation runs eight at a time. Each lane's operations and the order in which
// densities meet the n-best list are unchanged, so the output still is the stock build's bit for
// bit: on the bench hour's 90 segments 0.87x the CPU of round 19's build (13.0-13.4 s against
// 14.9-15.1 s on the first 30), every word timed identically.
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
const FRAME_EVAL = 431;
/** fsg_history_end_frame */
const HISTORY_END_FRAME = 358;
/** ptm_mgau_mllr_transform (rewrites a model's means and variances) and ptm_mgau_free */
const MLLR_TRANSFORM = 298;
const MGAU_FREE = 299;
/** malloc and free (the module's exports K and L) */
const MALLOC = 38;
const FREE = 19;
/** Functions added after the module's last one (478): see columnCopyFunctions */
const COLUMNS_OF = 479;
const COLUMNS_BUILD = 480;
const COLUMNS_FORGET = 481;
/** exported as lectern_column_models: the models that hold a slot now (test/hmm-simd.test.ts) */
const COLUMNS_COUNT = 482;
/** Globals added after the module's one (the stack pointer): per slot a model, its copy, its two deltas; then the deltas found */
const SLOTS = 4;
const G = { key: (n) => 1 + n, buf: (n) => 1 + SLOTS + n, dM: (n) => 1 + 2 * SLOTS + n, dV: (n) => 1 + 3 * SLOTS + n, curM: 1 + 4 * SLOTS, curV: 2 + 4 * SLOTS };

// Locals of the function (its parameters are 0-6): 7 var pointer, 9 obs pointer, 10 mean pointer
// (var and mean run on from one density to the next), 8 the dimension, 15 the dimension count
// (13: the models' three streams of 13), 21 its remainder mod 4, 19 the frame's features for
// this stream, 11 the density's det pointer, 18 the codebook's end, 22 the stack frame, 24 the
// score, 25 the current n-th best score, 20 its address, 16 "all dimensions done". Added:
const L = { f: 27, v: 28, D: 29, stride: 30, base: 31, M: 32, V: 36, O: 40, k: 41, R: 42, T: 46 };
// and for the column copy (columnDensities): 50 "the model has one", 51/52 what to add to a mean /
// variance address to get its column's, 53/54 the columns of this codebook's next densities,
// 55 a group's bytes in them, 56/57 the dimension's mean and variance columns, 58/59 the
// observation walked and its end, 60/61 two groups' scores, 62 the dimension's observation, 63 a difference
const C = { use: 50, dM: 51, dV: 52, cm: 53, cv: 54, gs: 55, p: 56, q: 57, r: 58, rEnd: 59, A: 60, B: 61, o: 62, t: 63 };
const ADDED_LOCALS = `f32 v128 v128 i32 i32 v128 v128 v128 v128 v128 v128 v128 v128 v128 i32 v128 v128 v128 v128 v128 v128 v128 v128 ${'i32 '.repeat(10)}v128 v128 v128 v128`;

const lines = (text) => text.split('\n').map((l) => l.trim()).filter(Boolean);
const advance = (local, bytes) => `local.get ${local}\ni32.const ${bytes}\ni32.add\nlocal.set ${local}`;
/** local out = max(the value on the stack, 0), through local tmp (the original code's idiom) */
const atLeastZero = (tmp, out) => `local.tee ${tmp}\ni32.const 0\nlocal.get ${tmp}\ni32.const 0\ni32.gt_s\nselect\nlocal.set ${out}`;
/** while (local i < local n) { body } */
const whileLess = (i, n, body) => `block\nloop\nlocal.get ${i}\nlocal.get ${n}\ni32.ge_s\nbr_if 1\n${body}\nbr 0\nend\nend`;
/** for (local i = 0; i < local n; ) { body } */
const countUp = (i, n, body) => `i32.const 0\nlocal.set ${i}\n${whileLess(i, n, body)}`;
/** address local + 4 * (dimension) */
const atDim = (local) => `local.get ${local}\nlocal.get 8\ni32.const 2\ni32.shl\ni32.add`;

/** score -= var*(obs-mean)^2 of four dimensions, the lanes subtracted one by one in order (one density) */
const fourDims = (score, obs, mean, variance) => `
local.get ${obs}
v128.load align=4
local.get ${mean}
v128.load align=4
f32x4.sub
local.tee ${L.v}
local.get ${L.v}
f32x4.mul
local.get ${variance}
v128.load align=4
f32x4.mul
local.set ${L.v}
local.get ${score}
${[0, 1, 2, 3].map((q) => `local.get ${L.v}\nf32x4.extract_lane ${q}\nf32.sub`).join('\n')}
local.set ${score}`;

/** one density scored on all its dimensions, no early stop (replaces eval_cb's two loops) */
const oneDensity = `
i32.const 0
local.set 8
local.get 19
local.set 9
${whileLess(8, 21, `local.get 8
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
local.tee ${L.f}
local.get ${L.f}
f32.mul
f32.mul
f32.sub
local.set 24
${advance(7, 4)}
${advance(9, 4)}
${advance(10, 4)}`)}
${whileLess(8, 15, `${fourDims(24, 9, 10, 7)}
${advance(8, 4)}
${advance(7, 16)}
${advance(9, 16)}
${advance(10, 16)}`)}
i32.const 1
local.set 16`;

// 32-bit lanes of i8x16.shuffle: a0 b0 a1 b1 / a2 b2 a3 b3 / a0 a1 b0 b1 / a2 a3 b2 b3
const SHUFFLE = {
  lo: '0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23',
  hi: '8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31',
  lo64: '0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23',
  hi64: '8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31',
};
const shuffle = (a, b, lanes, out) => `local.get ${a}\nlocal.get ${b}\ni8x16.shuffle ${SHUFFLE[lanes]}\nlocal.set ${out}`;
/** four densities' four dimensions from `base` (density k at base + k*stride) as four columns: out+j holds dimension j of the four */
const columns = (out) => `
${[0, 1, 2, 3].map((k) => `local.get ${L.base}${k ? `\nlocal.get ${L.stride}\ni32.const ${k}\ni32.mul\ni32.add` : ''}\nv128.load align=4\nlocal.set ${L.R + k}`).join('\n')}
${shuffle(L.R, L.R + 1, 'lo', L.T)}
${shuffle(L.R, L.R + 1, 'hi', L.T + 1)}
${shuffle(L.R + 2, L.R + 3, 'lo', L.T + 2)}
${shuffle(L.R + 2, L.R + 3, 'hi', L.T + 3)}
${shuffle(L.T, L.T + 2, 'lo64', out)}
${shuffle(L.T, L.T + 2, 'hi64', out + 1)}
${shuffle(L.T + 1, L.T + 3, 'lo64', out + 2)}
${shuffle(L.T + 1, L.T + 3, 'hi64', out + 3)}`;
/** one dimension of four densities, lane k from base + k*stride */
const gather = (ptr) => `
${atDim(ptr)}
local.tee ${L.base}
f32.load
f32x4.splat
${[1, 2, 3].map((k) => `local.get ${L.base}\nlocal.get ${L.stride}\ni32.const ${k}\ni32.mul\ni32.add\nf32.load\nf32x4.replace_lane ${k}`).join('\n')}`;

/**
 * The four scores in v128 local `D` (the densities at local 11 on) offered to the n-best list:
 * unless all four are under the n-th best (the usual case: nothing to insert), each density in
 * turn meets eval_cb's own insertion code (`insert`, unchanged) against the n-th best as it
 * stands after the one before. Local 11 ends four densities on.
 */
const offerFour = (D, insert) => `local.get ${D}
local.get 20
i32.load
f32.convert_i32_s
f32x4.splat
f32x4.lt
i32x4.all_true
if
${advance(11, 16)}
else
local.get 22
local.get ${D}
v128.store offset=16 align=4
i32.const 0
local.set ${L.k}
loop
local.get 22
local.get ${L.k}
i32.const 2
i32.shl
i32.add
f32.load offset=16
local.set 24
local.get 20
i32.load
f32.convert_i32_s
local.set 25
block
${insert.join('\n')}
end
${advance(11, 4)}
local.get ${L.k}
i32.const 1
i32.add
local.tee ${L.k}
i32.const 4
i32.lt_u
br_if 0
end
end`;

/** while `groups` groups of four densities are left (local 11 their first det, 18 the end): their four dets into `scores`, then `body` */
const densityGroups = (groups, scores, body) => `block
loop
local.get 11
i32.const ${16 * groups}
i32.add
local.get 18
i32.gt_u
br_if 1
local.get 11
v128.load align=4
local.set ${scores}
${body}
br 0
end
end`;

/**
 * Four densities at once, a lane each: D -= var*(obs-mean)^2 one dimension after another, so
 * each lane does exactly one density's operations in the original order, from four densities'
 * rows transposed in registers; then `offerFour`. The scorer of a model with no column copy
 * (`columnDensities` below). A codebook's last densities (if its size is no multiple of 4)
 * go one at a time (`oneDensity`; not reached with the bundled models, 128 densities each).
 */
const fourDensities = (insert) => `
local.get 15
i32.const 2
i32.shl
local.set ${L.stride}
${densityGroups(1, L.D, `i32.const 0
local.set 8
${whileLess(8, 21, `local.get ${L.D}
${atDim(19)}
f32.load
f32x4.splat
${gather(10)}
f32x4.sub
local.tee ${L.v}
local.get ${L.v}
f32x4.mul
${gather(7)}
f32x4.mul
f32x4.sub
local.set ${L.D}
${advance(8, 1)}`)}
${whileLess(8, 15, `${atDim(10)}
local.set ${L.base}
${columns(L.M)}
${atDim(7)}
local.set ${L.base}
${columns(L.V)}
${atDim(19)}
v128.load align=4
local.set ${L.O}
${[0, 1, 2, 3].map((q) => `local.get ${L.D}\nlocal.get ${L.O}\nf32x4.extract_lane ${q}\nf32x4.splat\nlocal.get ${L.M + q}\nf32x4.sub\nlocal.tee ${L.v}\nlocal.get ${L.v}\nf32x4.mul\nlocal.get ${L.V + q}\nf32x4.mul\nf32x4.sub\nlocal.set ${L.D}`).join('\n')}
${advance(8, 4)}`)}
${offerFour(L.D, insert)}
local.get 7
local.get ${L.stride}
i32.const 2
i32.shl
i32.add
local.set 7
local.get 10
local.get ${L.stride}
i32.const 2
i32.shl
i32.add
local.set 10`)}`;

/** score -= var*(obs-mean)^2 for four densities, their mean and variance columns at p and q (plus `plus` bytes) */
const columnDim = (score, plus) => `local.get ${score}
local.get ${C.o}
local.get ${C.p}${plus ? `\nlocal.get ${plus}\ni32.add` : ''}
v128.load align=4
f32x4.sub
local.tee ${C.t}
local.get ${C.t}
f32x4.mul
local.get ${C.q}${plus ? `\nlocal.get ${plus}\ni32.add` : ''}
v128.load align=4
f32x4.mul
f32x4.sub
local.set ${score}`;

/** `groups` (1 or 2) groups of four densities scored on every dimension from the column copy, then offered in order */
const columnGroups = (groups, insert) => densityGroups(groups, C.A, `${groups === 2 ? `local.get 11\nv128.load offset=16 align=4\nlocal.set ${C.B}` : ''}
local.get ${C.cm}
local.set ${C.p}
local.get ${C.cv}
local.set ${C.q}
local.get 19
local.set ${C.r}
block
loop
local.get ${C.r}
local.get ${C.rEnd}
i32.ge_u
br_if 1
local.get ${C.r}
v128.load32_splat align=4
local.set ${C.o}
${columnDim(C.A, 0)}
${groups === 2 ? columnDim(C.B, C.gs) : ''}
${advance(C.r, 4)}
${advance(C.p, 16)}
${advance(C.q, 16)}
br 0
end
end
${offerFour(C.A, insert)}
${groups === 2 ? offerFour(C.B, insert) : ''}
${[C.cm, C.cv].map((x) => `local.get ${x}\nlocal.get ${C.gs}${groups === 2 ? `\ni32.const 1\ni32.shl` : ''}\ni32.add\nlocal.set ${x}`).join('\n')}`);

/**
 * The scorer with a column copy of the model (round 21): the means and variances of four
 * densities laid out one dimension per vector, so a dimension is two loads where
 * `fourDensities` transposes four rows in registers, and two groups of four scored side by side
 * (each group's running score is a chain of dependent subtractions; two chains keep the CPU
 * busy). Each lane still performs one density's operations in the original order, and the
 * groups are offered in density order, so the n-best lists are the stock build's. A codebook
 * whose size is no multiple of 4 has no copy (`columnsBuild`).
 */
const columnDensities = (insert) => `
local.get 10
local.get ${C.dM}
i32.add
local.set ${C.cm}
local.get 7
local.get ${C.dV}
i32.add
local.set ${C.cv}
local.get 15
i32.const 4
i32.shl
local.set ${C.gs}
local.get 19
local.get 15
i32.const 2
i32.shl
i32.add
local.set ${C.rEnd}
${columnGroups(2, insert)}
${columnGroups(1, insert)}`;

/**
 * The column copy of a model's means and variances, made the first time a frame is scored with
 * it and dropped with it (ptm_mgau_free, and ptm_mgau_mllr_transform, which rewrites them):
 * `columnsOf(s)` finds or makes the copy of the ptm_mgau `s` among SLOTS slots (a worker's
 * decoders hold one to three models), sets the globals G.curM/G.curV to what to add to a mean
 * and a variance address to reach its copy, and returns 1; 0 where there is none (slots full,
 * malloc failed, or a layout this copy does not handle), and the scorer then transposes as before.
 * The copy keeps each (codebook, stream) block where the model's buffer has it; inside a block,
 * density k's dimension d goes to ((k/4)*veclen + d)*4 + k%4. About 1.7 MB for the en-us model.
 * The gauden fields read (ms_gauden.h): mean 0, var 4, n_mgau 16, n_feat 20, n_density 24,
 * featlen 28; ptm_mgau: g at 12.
 */
const columnCopyFunctions = () => {
  /** global `to` = global `from`, for each pair */
  const copyGlobals = (pairs) => pairs.map(([from, to]) => `global.get ${from}\nglobal.set ${to}`).join('\n');
  const slotFound = (n) => `local.get 0
global.get ${G.key(n)}
i32.eq
if
${copyGlobals([[G.dM(n), G.curM], [G.dV(n), G.curV]])}
global.get ${G.buf(n)}
i32.const 0
i32.ne
return
end`;
  const slotTaken = (n) => `global.get ${G.key(n)}
i32.eqz
if
local.get 0
global.set ${G.key(n)}
local.get 0
call ${COLUMNS_BUILD}
local.tee 1
global.set ${G.buf(n)}
${copyGlobals([[G.curM, G.dM(n)], [G.curV, G.dV(n)]])}
local.get 1
i32.const 0
i32.ne
return
end`;
  const slotForget = (n) => `local.get 0
global.get ${G.key(n)}
i32.eq
if
global.get ${G.buf(n)}
call ${FREE}
i32.const 0
global.set ${G.key(n)}
i32.const 0
global.set ${G.buf(n)}
end`;
  // build locals: 0 s, 1 g, 2 n_mgau, 3 n_feat, 4 n_density, 5 featlen, 6 floats in all (T),
  // 7 the copy, 8 codebook, 9 stream, 10 its length, 11 0 means / 1 variances, 12 a block,
  // 13 where its copy goes, 14 density, 15 dimension, 16 the buffer's start, 17 the density table, 18 sum of lengths
  const fail = `local.get 7\ncall ${FREE}\ni32.const 0\nreturn`;
  /** 4 * (row * featlen + dimension): `row` the code that puts the row on the stack, local 10 featlen, 15 the dimension */
  const rowOf = (row) => `${row}\nlocal.get 10\ni32.mul\nlocal.get 15\ni32.add\ni32.const 2\ni32.shl`;
  /** the i32 at (the address on the stack) + 4 * local `index` */
  const loadAt = (index) => `local.get ${index}\ni32.const 2\ni32.shl\ni32.add\ni32.load`;
  const build = `(local i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32)
local.get 0
i32.load offset=12
local.tee 1
i32.load offset=16
local.set 2
${[[20, 3], [24, 4], [28, 5]].map(([offset, local]) => `local.get 1\ni32.load offset=${offset}\nlocal.set ${local}`).join('\n')}
local.get 4
i32.const 3
i32.and
local.get 4
i32.const 1
i32.lt_s
i32.or
local.get 2
i32.const 1
i32.lt_s
i32.or
local.get 3
i32.const 1
i32.lt_s
i32.or
if
i32.const 0
return
end
${countUp(9, 3, `local.get 18
local.get 5
${loadAt(9)}
i32.add
local.set 18
${advance(9, 1)}`)}
local.get 2
local.get 4
i32.mul
local.get 18
i32.mul
local.tee 6
i32.const 3
i32.shl
call ${MALLOC}
local.tee 7
i32.eqz
if
i32.const 0
return
end
block
loop
local.get 1
${loadAt(11)}
i32.load
i32.load
i32.load
local.set 16
${countUp(8, 2, `${countUp(9, 3, `local.get 5
${loadAt(9)}
local.set 10
local.get 1
${loadAt(11)}
${loadAt(8)}
${loadAt(9)}
local.tee 17
i32.load
local.tee 12
local.get 16
i32.lt_u
local.get 12
local.get 16
i32.sub
local.get 4
local.get 10
i32.mul
i32.const 2
i32.shl
i32.add
local.get 6
i32.const 2
i32.shl
i32.gt_u
i32.or
local.get 17
local.get 4
i32.const 1
i32.sub
i32.const 2
i32.shl
i32.add
i32.load
local.get 12
local.get 4
i32.const 1
i32.sub
local.get 10
i32.mul
i32.const 2
i32.shl
i32.add
i32.ne
i32.or
local.get 10
i32.const 1
i32.lt_s
i32.or
if
${fail}
end
local.get 7
local.get 11
local.get 6
i32.mul
i32.const 2
i32.shl
i32.add
local.get 12
local.get 16
i32.sub
i32.add
local.set 13
${countUp(14, 4, `${countUp(15, 10, `local.get 13
${rowOf(`local.get 14\ni32.const 2\ni32.shr_u`)}
local.get 14
i32.const 3
i32.and
i32.add
i32.const 2
i32.shl
i32.add
local.get 12
${rowOf('local.get 14')}
i32.add
f32.load
f32.store
${advance(15, 1)}`)}
${advance(14, 1)}`)}
${advance(9, 1)}`)}
${advance(8, 1)}`)}
local.get 11
i32.const 1
i32.add
local.tee 11
i32.const 2
i32.lt_u
br_if 0
end
end
local.get 7
local.get 1
i32.load
i32.load
i32.load
i32.load
i32.sub
global.set ${G.curM}
local.get 7
local.get 6
i32.const 2
i32.shl
i32.add
local.get 1
i32.load offset=4
i32.load
i32.load
i32.load
i32.sub
global.set ${G.curV}
local.get 7`;
  return [
    `  (func (;${COLUMNS_OF};) (type 0) (param i32) (result i32)`,
    '(local i32)',
    ...lines([...Array(SLOTS).keys()].map(slotFound).join('\n')),
    ...lines([...Array(SLOTS).keys()].map(slotTaken).join('\n')),
    'i32.const 0)',
    `  (func (;${COLUMNS_BUILD};) (type 0) (param i32) (result i32)`,
    ...lines(build),
    ')',
    `  (func (;${COLUMNS_FORGET};) (type 2) (param i32)`,
    ...lines([...Array(SLOTS).keys()].map(slotForget).join('\n')),
    ')',
    `  (func (;${COLUMNS_COUNT};) (type 10) (result i32)`,
    ...lines([...Array(SLOTS).keys()].map((n) => `global.get ${G.key(n)}\ni32.const 0\ni32.ne${n ? '\ni32.add' : ''}`).join('\n')),
    ')',
  ];
};

/**
 * fsg_history_end_frame (fsg_history.c), called once a frame: for every state of the grammar and
 * every left-context phone it moves the list of history entries made in this frame to the
 * history, frees the list and clears the slot. Almost every slot is empty, but the loop visits
 * states x phones of them each frame (a 90 s segment's grammar: thousands of states x 42), with
 * a call to glist_free for each: a third of the align phase's CPU on the bench hour's segments,
 * growing with the segment's length. Rewritten: a grammar state's row of slots is first OR-ed
 * four pointers at a time, and only a row with a list in it is walked, slot by slot, exactly as
 * before (the same entries appended in the same order; glist_free of an empty list and clearing
 * an empty slot did nothing).
 * Locals: 0 the history, 1 the state, 2 a list walk, 3 the phone, 4 the row, 5 the slot,
 * 6 phones, 7 states, 8 the OR of a row's last pointers, 9 the OR of its first ones.
 */
const historyEndFrame = `
(local i32 i32 i32 i32 i32 i32 i32 i32 v128)
local.get 0
i32.load offset=12
${atLeastZero(1, 6)}
local.get 0
i32.load
i32.load offset=32
${atLeastZero(1, 7)}
i32.const 0
local.set 1
block
loop
local.get 1
local.get 7
i32.ge_s
br_if 1
local.get 0
i32.load offset=8
local.get 1
i32.const 2
i32.shl
i32.add
i32.load
local.set 4
v128.const i32x4 0 0 0 0
local.set 9
i32.const 0
local.set 3
block
loop
local.get 3
i32.const 4
i32.add
local.get 6
i32.gt_s
br_if 1
local.get 9
local.get 4
local.get 3
i32.const 2
i32.shl
i32.add
v128.load align=4
v128.or
local.set 9
${advance(3, 4)}
br 0
end
end
i32.const 0
local.set 8
${whileLess(3, 6, `local.get 8
local.get 4
local.get 3
i32.const 2
i32.shl
i32.add
i32.load
i32.or
local.set 8
${advance(3, 1)}`)}
local.get 9
v128.any_true
local.get 8
i32.or
if
i32.const 0
local.set 3
block
loop
local.get 3
local.get 6
i32.ge_s
br_if 1
local.get 4
local.get 3
i32.const 2
i32.shl
i32.add
local.tee 5
i32.load
if
local.get 5
local.set 2
block
loop
local.get 2
i32.load
local.tee 2
i32.eqz
br_if 1
local.get 0
i32.load offset=4
local.get 2
i32.load
call 315
${advance(2, 8)}
br 0
end
end
local.get 5
i32.load
call 35
local.get 5
i32.const 0
i32.store
end
${advance(3, 1)}
br 0
end
end
end
${advance(1, 1)}
br 0
end
end`;

const SHA_GLOBAL_GET_0 = sha256('    global.get 0');
const SHA_LOCAL_GET_0 = sha256('    local.get 0');
const SHA_LOCAL_SET_0 = sha256('          local.set 0');

/**
 * Each patch replaces lines [from, to] (1-based, within the function's text) whose text hashes
 * to `sha256`; `replace` gets the old lines.
 */
const PATCHES = [
  {
    func: FRAME_EVAL,
    what: 'the added locals',
    from: 2,
    to: 2,
    sha256: '0b4a5830c8c55bd6221ed1bfb4e7c3918583db5f33d8da5fb19783e14ef204ab',
    replace: (old) => [old[0].replace(/f32 f32 i64\)$/, `f32 f32 i64 ${ADDED_LOCALS})`)],
  },
  {
    func: FRAME_EVAL,
    what: "the model's column copy, found or made (columnsOf) before the stack frame is taken",
    from: 3,
    to: 3,
    sha256: SHA_GLOBAL_GET_0,
    replace: (old) => [...lines(`local.get 0\ncall ${COLUMNS_OF}\nlocal.tee ${C.use}\nif\nglobal.get ${G.curM}\nlocal.set ${C.dM}\nglobal.get ${G.curV}\nlocal.set ${C.dV}\nend`), ...old],
  },
  {
    func: FRAME_EVAL,
    what: 'a stack frame of 32 bytes (was 16): 16 more for four scores',
    from: 4,
    to: 4,
    sha256: '16075ee8cbdff19619c603f67d1a3eebca613b2866cdbc8b06e7188c10723304',
    replace: () => ['i32.const 32'],
  },
  {
    func: FRAME_EVAL,
    what: 'eval_topn: four dimensions of a kept density at once',
    from: 279,
    to: 328,
    sha256: '8a4bf246d28237e483f481373ee2c510fd0d8f594a33909724b4409017df5431',
    replace: () => lines(fourDims(24, 9, 10, 7)),
  },
  {
    func: FRAME_EVAL,
    what: 'eval_cb: densities four at a time, the rest one at a time, every dimension, no early stop',
    from: 598,
    to: 843,
    sha256: '896f83d7849d2b94e11051304b685f5d8257251619dc46bb8ea5e2592496a239',
    // old: 598-610 the loop head (score, n-th best), 611-739 the two scoring loops, 740-843 the
    // early-stop bookkeeping, then 759-835 the insertion into the n-best list, and the loop's end
    replace: (old) => {
      const insert = old.slice(759 - 598, 835 - 598 + 1);
      const scored = `local.get ${C.use}\nif\n${columnDensities(insert)}\nelse\n${fourDensities(insert)}\nend`;
      return [...lines(scored), ...old.slice(0, 611 - 598), ...lines(oneDensity), ...old.slice(740 - 598)];
    },
  },
  {
    func: FRAME_EVAL,
    what: 'ptm_mgau_senone_eval: every senone score less the best, eight at a time',
    from: 1072,
    to: 1072,
    sha256: SHA_LOCAL_SET_0,
    // locals: 0 the senone count, 7 the senone, 11 the scores (int16), 5 the best score; the
    // scalar loop after it does what is left (a count no multiple of 8). i16x8.sub wraps as the
    // scalar's store16 of the difference truncates, so every score is the same.
    replace: (old) => [...old, ...lines(`local.get 5
i16x8.splat
local.set ${C.t}
block
loop
local.get 7
i32.const 8
i32.add
local.get 0
i32.gt_s
br_if 1
local.get 11
local.get 7
i32.const 1
i32.shl
i32.add
local.tee ${C.p}
local.get ${C.p}
v128.load align=2
local.get ${C.t}
i16x8.sub
v128.store align=2
${advance(7, 8)}
br 0
end
end`)],
  },
  {
    func: FRAME_EVAL,
    what: 'the frame released: 32 bytes',
    from: 1373,
    to: 1373,
    sha256: '16075ee8cbdff19619c603f67d1a3eebca613b2866cdbc8b06e7188c10723304',
    replace: () => ['i32.const 32'],
  },
  {
    func: MLLR_TRANSFORM,
    what: "ptm_mgau_mllr_transform: the model's column copy dropped before its means change",
    from: 2,
    to: 2,
    sha256: SHA_LOCAL_GET_0,
    replace: (old) => [`local.get 0`, `call ${COLUMNS_FORGET}`, ...old],
  },
  {
    func: MGAU_FREE,
    what: "ptm_mgau_free: the model's column copy freed with it",
    from: 3,
    to: 3,
    sha256: SHA_LOCAL_GET_0,
    replace: (old) => [`local.get 0`, `call ${COLUMNS_FORGET}`, ...old],
  },
  {
    func: HISTORY_END_FRAME,
    what: 'fsg_history_end_frame: rows of empty lists passed over four pointers at a time',
    from: 1,
    to: 100,
    sha256: '5995eb969aad7fa5a129b8d2c7cc281c9b193cc0f21014441786f863f87703a4',
    replace: () => [`  (func (;${HISTORY_END_FRAME};) (type 2) (param i32)`, ...lines(historyEndFrame), ')'],
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
  const startOf = (func) => {
    const i = lines.findIndex((l) => l.startsWith(`  (func (;${func};)`));
    if (i < 0) throw new Error(`function ${func} not found in the disassembly`);
    return i;
  };
  // the module's own lines, that the added globals and functions go after and before
  const globals = lines.filter((l) => l.startsWith('  (global '));
  if (globals.length !== 1 || !globals[0].startsWith('  (global (;0;) (mut i32)')) throw new Error(`expected the stack pointer as the module's one global, found ${globals.length}`);
  const lastFunc = lines.findLastIndex((l) => l.startsWith('  (func '));
  if (!lines[lastFunc].startsWith(`  (func (;${COLUMNS_OF - 1};)`)) throw new Error(`expected function ${COLUMNS_OF - 1} to be the module's last`);
  const placed = PATCHES.map((p) => ({ ...p, at: startOf(p.func) + p.from - 1 }));
  // later lines first, so that the earlier patches' line numbers still hold
  for (const p of placed.sort((a, b) => b.at - a.at)) {
    const old = lines.slice(p.at, p.at + p.to - p.from + 1);
    if (sha256(old.join('\n')) !== p.sha256) throw new Error(`patch "${p.what}": lines ${p.from}-${p.to} of function ${p.func} are not what the patch expects (wabt ${require('wabt/package.json').version}?)`);
    lines.splice(p.at, old.length, ...p.replace(old));
  }
  lines.splice(lines.findIndex((l) => l.startsWith('  (table ')), 0, ...columnCopyFunctions());
  lines.splice(lines.findIndex((l) => l.startsWith('  (export ')), 0, `  (export "lectern_column_models" (func ${COLUMNS_COUNT}))`);
  const added = Array.from({ length: 4 * SLOTS + 2 }, (_, i) => `  (global (;${i + 1};) (mut i32) (i32.const 0))`);
  lines.splice(lines.findIndex((l) => l.startsWith('  (global (;0;)')) + 1, 0, ...added);
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
