// English transcription with CMU PocketSphinx from Debian (`pocketsphinx` for the
// pocketsphinx_continuous command, `pocketsphinx-en-us` for the acoustic model, language
// model and dictionary). Runs with no download; a separate process per request, so the
// decoder (BSD-licensed, but not thread-safe) never shares state between requests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runTool, ToolMissingError } from '../../media/ffmpeg.ts';
import { encodeWav } from '../../media/wav.ts';
import { resample } from '../../native/index.ts';
import type { Transcriber } from '../types.ts';
import { MissingModelError, SpeechInputError } from '../types.ts';

export interface PocketsphinxOptions {
  /** Folder holding en-us/ (acoustic model), en-us.lm.bin and cmudict-en-us.dict. */
  modelDir?: string;
  command?: string;
}

export const POCKETSPHINX_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
const RATE = 16000; // the en-us acoustic model is trained on 16 kHz audio

export function pocketsphinxModelFiles(modelDir = POCKETSPHINX_MODEL_DIR) {
  return {
    hmm: path.join(modelDir, 'en-us'),
    lm: path.join(modelDir, 'en-us.lm.bin'),
    dict: path.join(modelDir, 'cmudict-en-us.dict'),
  };
}

/** English only: `en`, `en-US`, `en-GB`, ... (the model is US English; other accents degrade, not fail). */
export const pocketsphinxSupports = (language: string): boolean => /^en(-|_|$)/i.test(language);

export function createPocketsphinxTranscriber(opts: PocketsphinxOptions = {}): Transcriber {
  const files = pocketsphinxModelFiles(opts.modelDir);
  for (const f of Object.values(files)) {
    if (!fs.existsSync(f)) {
      throw new MissingModelError(`PocketSphinx English model file ${f} is missing (install the Debian package pocketsphinx-en-us)`);
    }
  }
  const command = opts.command ?? 'pocketsphinx_continuous';
  return {
    name: 'pocketsphinx',
    supports: pocketsphinxSupports,
    async transcribe(samples, sampleRate, language) {
      if (!pocketsphinxSupports(language)) {
        throw new SpeechInputError(`no transcription engine for language "${language}" (pocketsphinx is English only; install a Whisper model for other languages)`);
      }
      const audio = sampleRate === RATE ? samples : resample(samples, sampleRate, RATE);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-asr-'));
      try {
        const wav = path.join(dir, 'in.wav');
        fs.writeFileSync(wav, encodeWav(audio, RATE));
        const { stdout } = await runTool(
          command,
          ['-infile', wav, '-hmm', files.hmm, '-lm', files.lm, '-dict', files.dict, '-samprate', String(RATE), '-logfn', '/dev/null'],
          { what: 'pocketsphinx_continuous (Debian package pocketsphinx)' },
        ).catch((e) => {
          if (e instanceof ToolMissingError) throw new MissingModelError(e.message);
          throw e;
        });
        // One line per utterance the voice-activity detector found.
        return stdout
          .toString('utf8')
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
          .join(' ');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
