// `npm run bench [name…] [--flag…]`: runs each bench/<name>.bench.ts in its own process, one
// after another (they measure the machine, so never two at once). No names → all of them.
// Flags (`--rounds=6`) go to every bench run; each reads the ones it knows.
// `--quick` (or BENCH_QUICK=1; `npm run bench:quick`) runs every bench at tiny sizes as a
// smoke test (bench/quick.ts): two at a time, since their figures are not read, with a
// time limit per bench; a bench that fails or runs out of time fails the run.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const dir = import.meta.dirname;
const all = fs.readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).map((f) => f.replace(/\.bench\.ts$/, '')).sort();
const args = process.argv.slice(2);
const quick = args.includes('--quick') || process.env.BENCH_QUICK === '1';
const wanted = args.filter((a) => !a.startsWith('--'));
const passed = args.filter((a) => a.startsWith('--') && a !== '--quick');
const unknown = wanted.filter((w) => !all.includes(w));
if (unknown.length) {
  console.error(`unknown bench: ${unknown.join(', ')} (have: ${all.join(', ')})`);
  process.exit(2);
}
const PARALLEL = quick ? 2 : 1;
const LIMIT_MS = quick ? 60_000 : Infinity;

interface Outcome { name: string; ok: boolean; ms: number; output: string }

function runOne(name: string): Promise<Outcome> {
  const t0 = performance.now();
  const env = quick ? { ...process.env, BENCH_QUICK: '1' } : process.env;
  // Quick runs go two at a time: their output is gathered and printed whole when each ends.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(dir, `${name}.bench.ts`), ...passed], { env, stdio: quick ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
  let output = '';
  child.stdout?.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
  const timer = Number.isFinite(LIMIT_MS) ? setTimeout(() => {
    output += `\n(out of time: ${LIMIT_MS / 1000} s)`;
    child.kill('SIGKILL');
  }, LIMIT_MS) : undefined;
  return new Promise((resolve) => {
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ name, ok: code === 0, ms: performance.now() - t0, output });
    });
  });
}

const queue = [...(wanted.length ? wanted : all)];
const outcomes: Outcome[] = [];
const t0 = performance.now();
await Promise.all(
  Array.from({ length: PARALLEL }, async () => {
    for (let name = queue.shift(); name; name = queue.shift()) {
      if (!quick) console.log(`\n=== bench/${name}.bench.ts`);
      const o = await runOne(name);
      outcomes.push(o);
      if (quick) console.log(`\n=== bench/${name}.bench.ts (quick) ${o.ok ? 'ok' : 'FAILED'} in ${(o.ms / 1000).toFixed(1)} s\n${o.output.trimEnd()}`);
    }
  }),
);
const failed = outcomes.filter((o) => !o.ok);
if (quick) console.log(`\nbench quick: ${outcomes.length - failed.length}/${outcomes.length} ran in ${((performance.now() - t0) / 1000).toFixed(1)} s${failed.length ? `; failed: ${failed.map((o) => o.name).join(', ')}` : ''}`);
process.exit(failed.length ? 1 : 0);
