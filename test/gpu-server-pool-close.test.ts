// Closing the GPU server's thread pool with a task still running: the task ends first, so no
// thread is terminated inside a native call (a fork of CI once aborted with "terminate called
// after throwing an instance of 'Napi::Error'" while a pool went away). And the pool's worker
// file is one piscina can require() as CommonJS (a fork of CI once aborted in Node's require()
// of the ES entry it had before: "v8::Module::IsGraphAsync must be used on an instantiated module").
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpeechPool } from '../src/gpu-server/thread-pool.ts';
import { decodeWav } from '../src/media/wav.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');

describe('GPU server thread pool: close', () => {
  it('lets a running task finish (a real dtw alignment in a worker thread), then ends the threads', async () => {
    const pool = new SpeechPool({ workers: 1, maxQueue: 8, device: 'cpu', modelsDir: 'models', computeType: 'fp32', intraOpThreads: 1, sessionBatch: 1 });
    const { samples, sampleRate } = decodeWav(readFileSync(path.join(FIX, 'speech', 'jfk.wav')));
    const text = (JSON.parse(readFileSync(path.join(FIX, 'alignment', 'jfk.json'), 'utf8')) as { text: string }).text;
    const running = pool.align('dtw', samples.slice(), sampleRate, text, 'en-US'); // (its buffer is transferred)
    await new Promise((r) => setTimeout(r, 100)); // the worker has the task (it starts, loads the aligner, aligns: ~0.4 s)
    const closed = pool.close();
    const words = await running; // with piscina.destroy() this rejected: "Terminating worker thread"
    expect(words.words.length).toBe(text.split(/\s+/).length);
    await closed;
  }, 60_000);

  it("gives piscina a CommonJS worker file: require() returns the task handler without loading an ES module synchronously", async () => {
    const file = path.join(import.meta.dirname, '..', 'src', 'gpu-server', 'pool-thread-bootstrap.cjs');
    const source = readFileSync(path.join(import.meta.dirname, '..', 'src', 'gpu-server', 'thread-pool.ts'), 'utf8');
    expect(source).toContain("new URL('./pool-thread-bootstrap.cjs', import.meta.url)");
    // in a process of its own: requiring it starts the import of the pool's ES entry (tsx, the handler)
    const out = execFileSync(process.execPath, ['-e', `process.stdout.write(typeof require(${JSON.stringify(file)})); process.exit(0)`], { encoding: 'utf8' });
    expect(out).toBe('function');
  });
});
