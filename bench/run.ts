// `npm run bench [name…] [--flag…]`: runs each bench/<name>.bench.ts in its own process, one
// after another (they measure the machine, so never two at once). No names → all of them.
// Flags (`--quick`, `--rounds=6`) go to every bench run; each reads the ones it knows.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const dir = import.meta.dirname;
const all = fs.readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).map((f) => f.replace(/\.bench\.ts$/, '')).sort();
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const passed = process.argv.slice(2).filter((a) => a.startsWith('--'));
const unknown = wanted.filter((w) => !all.includes(w));
if (unknown.length) {
  console.error(`unknown bench: ${unknown.join(', ')} (have: ${all.join(', ')})`);
  process.exit(2);
}
let failed = 0;
for (const name of wanted.length ? wanted : all) {
  console.log(`\n=== bench/${name}.bench.ts`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(dir, `${name}.bench.ts`), ...passed], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
