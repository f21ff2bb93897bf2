// The plain HMM baseline: Debian's pocketsphinx_continuous with its en-us model and a JSGF
// grammar that admits only the transcript, -time yes, no refinement.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { WordTiming } from '../src/speech/types.ts';
import { tokenizeWords } from '../src/speech/words.ts';

const PS = '/usr/share/pocketsphinx/model/en-us';

/** Word timings of `text` in the WAV at `wav` (resampled to 16 kHz by ffmpeg when it is not). */
export function plainPocketsphinx(wav: string, sampleRate: number, text: string): WordTiming[] {
  const tmp = mkdtempSync(path.join(tmpdir(), 'lectern-ps-'));
  try {
    const tokens = tokenizeWords(text);
    const spoken = tokens.map((t) => t.word.toLowerCase().replace(/[^a-z']/g, ''));
    writeFileSync(path.join(tmp, 'g.gram'), `#JSGF V1.0;\ngrammar g;\npublic <s> = ${spoken.join(' ')};\n`);
    if (sampleRate !== 16000) {
      execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', wav, '-ar', '16000', '-ac', '1', path.join(tmp, 'a.wav')]);
      wav = path.join(tmp, 'a.wav');
    }
    const out = execFileSync('pocketsphinx_continuous', ['-infile', wav, '-jsgf', path.join(tmp, 'g.gram'), '-time', 'yes', '-vad_postspeech', '400', '-vad_threshold', '1.0',
      '-hmm', path.join(PS, 'en-us'), '-dict', path.join(PS, 'cmudict-en-us.dict')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const segs = out.split('\n').map((l) => l.trim().split(/\s+/)).filter((p) => p.length === 4 && !p[0]!.startsWith('<') && !p[0]!.startsWith('[') && /^\d/.test(p[1]!));
    if (segs.length !== tokens.length) throw new Error(`${path.basename(wav)}: pocketsphinx gave ${segs.length} words for ${tokens.length}`);
    return tokens.map((t, i) => ({ word: t.word, start: Number(segs[i]![1]), end: Number(segs[i]![2]) + 0.01 }));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
