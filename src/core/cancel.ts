// Cancellation shared by every layer that runs long work for a job (pipelines, renderers).
import { LecternError } from './errors.ts';

/** Thrown by long work that saw its job's cancel flag. */
export class JobCancelled extends LecternError {
  override name = 'JobCancelled';
  /** The failed job's error; the runner's generic one when absent. */
  constructor(readonly outcome?: string) {
    super('CANCELLED', outcome ?? 'stopped on request');
  }
}
