// Upload and download of a large file through the API: the local data dir against an S3 store
// (s3rver on 127.0.0.1, in its own process), in redirect and proxy mode. MB/s (medians of the
// repetitions) with the S3/local ratio measured in the same run, and the API process's peak RSS
// (VmHWM from /proc) at two file sizes: the goal is an RSS that does not grow with the file.
// A last row puts the same file into s3rver with the S3 store alone (no HTTP, no API) from the
// bench process: what the S3 server itself allows here, the ceiling for the S3 rows.
// The API is `lectern serve --no-worker` as a child process, so its RSS is its own.
// Run: node --import tsx bench/storage.bench.ts [sizeMB=200] [reps=3]     quick: ... 8 1
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { loadServiceConfig, PROJECT_ROOT } from '../src/config.ts';
import { createStorage } from '../src/storage/index.ts';
import { startS3 } from '../test/helpers/s3.ts';
import { QUICK, sized } from './quick.ts';

const SIZE_MB = sized(Number(process.argv[2] ?? 200), 2);
const REPS = sized(Number(process.argv[3] ?? 3), 1);
const SIZES = QUICK ? [SIZE_MB] : [Math.max(1, Math.round(SIZE_MB / 4)), SIZE_MB]; // RSS at two sizes (one in quick mode)
const MB = 1_000_000;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-bench-storage-'));

/** A file the upload sniffs as a PDF, `mb` MB of it, written once to disk (never held in memory). */
async function makeFile(mb: number): Promise<string> {
  const file = path.join(tmp, `doc-${mb}.pdf`);
  const out = fs.createWriteStream(file);
  out.write('%PDF-1.7\n');
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  let left = mb * MB - 9;
  while (left > 0) {
    const n = Math.min(left, chunk.length);
    if (!out.write(chunk.subarray(0, n))) await new Promise<void>((r) => out.once('drain', () => r()));
    left -= n;
  }
  await new Promise<void>((r, j) => out.end((e?: Error | null) => (e ? j(e) : r())));
  return file;
}

function startApi(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const dataDir = fs.mkdtempSync(path.join(tmp, 'data-'));
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin/lectern.js'), 'serve', '--no-worker'], {
    env: { ...process.env, LECTERN_DATA_DIR: dataDir, LECTERN_PORT: '0', LECTERN_LOG_LEVEL: 'error', LECTERN_RATE_LIMIT_PER_MINUTE: '0', LECTERN_MAX_UPLOAD_BYTES: String(SIZE_MB * MB + MB), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (b: Buffer) => {
      err += b.toString();
      const m = /serving on (http:\/\/\S+)/.exec(err);
      if (m) resolve({ url: m[1]!, child });
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err.slice(-400)}`)));
  });
}

/** Peak resident set size of a process so far, in MB (Linux). */
function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Streams the file as multipart/form-data; returns the upload id and seconds taken. */
async function uploadFile(url: string, file: string): Promise<{ id: string; seconds: number }> {
  const boundary = `----bench${Date.now()}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${path.basename(file)}"\r\nContent-Type: application/pdf\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const size = fs.statSync(file).size;
  const u = new URL(`${url}/api/uploads`);
  const t0 = performance.now();
  const body = await new Promise<string>((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + size + tail.length } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => (res.statusCode === 201 ? resolve(text) : reject(new Error(`upload: HTTP ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.write(head);
    const src = fs.createReadStream(file);
    src.on('error', reject);
    src.on('end', () => req.end(tail));
    src.pipe(req, { end: false });
  });
  return { id: (JSON.parse(body) as { id: string }).id, seconds: (performance.now() - t0) / 1000 };
}

/** Downloads through the API, following a redirect to the store; returns seconds and bytes. */
async function downloadFile(url: string, id: string): Promise<{ seconds: number; bytes: number; redirected: boolean }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/api/uploads/${id}/file`);
  if (res.status !== 200 || !res.body) throw new Error(`download: HTTP ${res.status}`);
  let bytes = 0;
  for await (const c of res.body) bytes += (c as Uint8Array).length;
  return { seconds: (performance.now() - t0) / 1000, bytes, redirected: res.redirected };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Row {
  store: string;
  sizeMb: number;
  upMBs: number;
  downMBs: number;
  idleRss: number;
  peakRss: number;
}

const s3 = await startS3('bench');
const rows: Row[] = [];
try {
  const stores: Array<[string, Record<string, string>]> = [
    ['local', {}],
    ['s3 redirect', s3.env('bench')],
    ['s3 proxy', { ...s3.env('bench'), LECTERN_STORAGE_DOWNLOAD: 'proxy' }],
  ];
  for (const sizeMb of SIZES) {
    const file = await makeFile(sizeMb);
    for (const [store, env] of stores) {
      const api = await startApi(env);
      try {
        // Warm up (module loading, first connections) with a small upload, then read the idle peak.
        const small = await makeFile(1);
        const w = await uploadFile(api.url, small);
        await downloadFile(api.url, w.id);
        const idleRss = peakRssMb(api.child.pid!);
        const ups: number[] = [];
        const downs: number[] = [];
        for (let i = 0; i < REPS; i++) {
          const u = await uploadFile(api.url, file);
          ups.push(sizeMb / u.seconds);
          const d = await downloadFile(api.url, u.id);
          if (d.bytes !== fs.statSync(file).size) throw new Error(`downloaded ${d.bytes} bytes of ${fs.statSync(file).size}`);
          if (d.redirected !== (store === 's3 redirect')) throw new Error(`${store}: redirected=${d.redirected}`);
          downs.push(sizeMb / d.seconds);
          await fetch(`${api.url}/api/uploads/${u.id}`, { method: 'DELETE' }).then((r) => r.arrayBuffer());
        }
        rows.push({ store, sizeMb, upMBs: median(ups), downMBs: median(downs), idleRss, peakRss: peakRssMb(api.child.pid!) });
      } finally {
        api.child.kill('SIGTERM');
        await new Promise((r) => api.child.once('exit', r));
      }
    }
    // The ceiling: the store alone, straight from the file to s3rver and back.
    const direct = createStorage(loadServiceConfig({}, { LECTERN_DATA_DIR: fs.mkdtempSync(path.join(tmp, 'direct-')), ...s3.env('direct') }));
    await direct.init();
    const ups: number[] = [];
    const downs: number[] = [];
    for (let i = 0; i < REPS; i++) {
      const key = `uploads/00000000-0000-4000-8000-${String(i).padStart(12, '0')}.pdf`;
      let t0 = performance.now();
      await direct.put(key, fs.createReadStream(file), { contentType: 'application/pdf' });
      ups.push(sizeMb / ((performance.now() - t0) / 1000));
      t0 = performance.now();
      await pipeline(await direct.read(key), fs.createWriteStream('/dev/null'));
      downs.push(sizeMb / ((performance.now() - t0) / 1000));
      await direct.delete(key);
    }
    await direct.close();
    rows.push({ store: 's3rver alone', sizeMb, upMBs: median(ups), downMBs: median(downs), idleRss: NaN, peakRss: NaN });
    fs.rmSync(file, { force: true });
  }
} finally {
  await s3.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}

console.log(`storage through the API: ${REPS} run(s) per case, medians; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log('store          size    upload MB/s   download MB/s   API RSS idle → peak');
for (const r of rows) {
  const rss = Number.isNaN(r.peakRss) ? '  (no API)' : `${r.idleRss.toFixed(0).padStart(5)} → ${r.peakRss.toFixed(0)} MB`;
  console.log(`${r.store.padEnd(13)} ${String(r.sizeMb).padStart(4)} MB  ${r.upMBs.toFixed(1).padStart(10)}   ${r.downMBs.toFixed(1).padStart(12)}   ${rss}`);
}
const at = (store: string, size: number) => rows.find((r) => r.store === store && r.sizeMb === size)!;
const big = SIZES.at(-1)!;
const small = SIZES[0]!;
console.log(`S3/local at ${big} MB: upload ${(at('s3 redirect', big).upMBs / at('local', big).upMBs).toFixed(2)}x, download (redirect) ${(at('s3 redirect', big).downMBs / at('local', big).downMBs).toFixed(2)}x, download (proxy) ${(at('s3 proxy', big).downMBs / at('local', big).downMBs).toFixed(2)}x (goal ≥ 0.5x)`);
console.log(`S3 through the API / s3rver alone at ${big} MB: upload ${(at('s3 redirect', big).upMBs / at('s3rver alone', big).upMBs).toFixed(2)}x, download (proxy) ${(at('s3 proxy', big).downMBs / at('s3rver alone', big).downMBs).toFixed(2)}x`);
for (const store of ['local', 's3 redirect', 's3 proxy']) {
  console.log(`${store}: API peak RSS ${at(store, small).peakRss.toFixed(0)} MB at ${small} MB, ${at(store, big).peakRss.toFixed(0)} MB at ${big} MB (goal: independent of the file size)`);
}
