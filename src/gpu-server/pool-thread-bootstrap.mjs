// The pool's ES entry, imported by pool-thread-bootstrap.cjs (piscina's worker file). Worker
// threads do not inherit the tsx loader reliably (under vitest forks process.execArgv lacks it),
// so each worker registers tsx itself and then loads the TypeScript handler.
import { register } from 'tsx/esm/api';

register();
const mod = await import('./pool-thread.ts');
export default mod.default;
