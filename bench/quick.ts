// Quick mode (BENCH_QUICK=1, `npm run bench:quick`, run by `npm test`): every bench runs once
// at tiny sizes so that none rots unnoticed; its figures mean nothing and nothing is asserted.
// A bench that needs what CI does not have (Debian packages scripts/setup.sh does not install,
// data that must be made or downloaded into bench/.cache first) skips with its reason.
export const QUICK = process.env.BENCH_QUICK === '1';

/** The full-run value, or the quick one under BENCH_QUICK=1. */
export const sized = <T>(full: T, quick: T): T => (QUICK ? quick : full);

/** In quick mode: prints why this bench does not run here and ends the process with success. */
export function skipQuick(reason: string): void {
  if (!QUICK) return;
  console.log(`skipped in quick mode: ${reason}`);
  process.exit(0);
}
