// Lip-sync providers: turn narration audio + a reference presenter video into an MP4
// whose mouth follows the audio. The GPU server's job table drives them.
import { LecternError } from '../../core/errors.ts';

export interface LipsyncRequest {
  audioPath: string;
  referenceVideoPath: string;
  /** Where the provider must write the finished MP4. */
  outputPath: string;
  /** One of presets(). */
  preset: string;
}

export interface LipsyncProvider {
  readonly name: string;
  presets(): string[];
  /**
   * Generates the video off the event loop (child process or worker pool).
   * Aborting `signal` must stop the generation promptly and reject.
   */
  generate(req: LipsyncRequest, signal: AbortSignal): Promise<void>;
}

/** The generation was stopped through its AbortSignal. */
export class LipsyncAbortedError extends LecternError {
  override name = 'LipsyncAbortedError';
  constructor(message: string) {
    super('CANCELLED', message);
  }
}
