// Worker-thread entry of a threaded aligner. Worker threads do not inherit the tsx loader
// reliably (under vitest forks process.execArgv lacks it), so the thread registers tsx itself
// and then loads the TypeScript entry.
import { register } from 'tsx/esm/api';

register();
await import('./aligner-thread.ts');
