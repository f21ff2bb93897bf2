// Worker-thread entry of the onnx lip-sync generator. Worker threads do not inherit the tsx
// loader reliably (under vitest forks process.execArgv lacks it), so the worker registers
// tsx itself and then loads the TypeScript entry.
import { register } from 'tsx/esm/api';

register();
await import('./generator-thread.ts');
