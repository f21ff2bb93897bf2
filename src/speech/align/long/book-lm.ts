// A language model and dictionary made from the book itself, for recognising where in the
// text a recording is: the recogniser then expects the book's own words in the book's own
// order, which makes it accurate on read speech and fast (a few thousand words, not 130k).
// Written as an ARPA back-off trigram model (absolute discounting) and the book's words of the
// model's dictionary (CMUdict for English), the two files PocketSphinx reads.
import fs from 'node:fs';
import { primaryLanguage } from '../acoustic-models.ts';

/**
 * French elided words ("l'homme", "qu'il", "jusqu'à"): the recogniser's dictionary has "l'",
 * "qu'", "jusqu'" … as words of their own and lacks most of their compounds.
 */
const FRENCH_ELISION = /^((?:jusqu|lorsqu|puisqu|quoiqu|presqu|qu|[cdjlmnst])')(?=\p{L})/u;

/**
 * Lower-case spoken form of a source token ("Dashwood's," → "dashwood's"; "ill-disposed" →
 * ["ill", "disposed"]; in French "l'homme" → ["l'", "homme"]).
 */
export function spokenWords(token: string, language = 'en'): string[] {
  const words = token
    .toLowerCase()
    .replace(/[’‘]/g, "'")
    .replace(/[^\p{L}\p{N}'\s-]/gu, ' ')
    .split(/[\s\-–—]+/u)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter(Boolean);
  if (primaryLanguage(language) !== 'fr') return words;
  return words.flatMap((w) => {
    const m = FRENCH_ELISION.exec(w);
    return m ? [m[1]!, w.slice(m[1]!.length)] : [w];
  });
}

/** Dictionary entries in CMUdict's format (word → pronunciations), alternates ("word(2)") kept under the base word. */
export function readDictionary(file: string, wanted?: Set<string>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const sp = line.indexOf(' ');
    if (sp <= 0) continue;
    const word = line.slice(0, sp).replace(/\(\d+\)$/, '');
    if (wanted && !wanted.has(word)) continue;
    const pron = line.slice(sp + 1).trim();
    const list = out.get(word);
    if (list) list.push(pron);
    else out.set(word, [pron]);
  }
  return out;
}

/** The dictionary file for the recogniser: only the book's words. */
export function dictionaryText(dict: Map<string, string[]>): string {
  const lines: string[] = [];
  for (const [word, prons] of dict) prons.forEach((p, i) => lines.push(`${i ? `${word}(${i + 1})` : word} ${p}`));
  return lines.join('\n') + '\n';
}

const DISCOUNT = 0.5;
const log10 = (p: number) => Math.log10(Math.max(p, 1e-99)).toFixed(4);

/**
 * ARPA trigram model over `sentences` (each a run of known words; a run breaks at an unknown
 * word, so no n-gram spans one). Absolute discounting with back-off weights that make each
 * history's distribution sum to one.
 */
export function arpaTrigram(sentences: string[][]): string {
  const uni = new Map<string, number>();
  const bi = new Map<string, Map<string, number>>();
  const tri = new Map<string, Map<string, number>>();
  const bump = (m: Map<string, Map<string, number>>, h: string, w: string) => {
    let inner = m.get(h);
    if (!inner) m.set(h, (inner = new Map()));
    inner.set(w, (inner.get(w) ?? 0) + 1);
  };
  for (const s of sentences) {
    const seq = ['<s>', ...s, '</s>'];
    for (let i = 0; i < seq.length; i++) {
      uni.set(seq[i]!, (uni.get(seq[i]!) ?? 0) + 1);
      if (i >= 1) bump(bi, seq[i - 1]!, seq[i]!);
      if (i >= 2) bump(tri, `${seq[i - 2]} ${seq[i - 1]}`, seq[i]!);
    }
  }
  const total = [...uni.values()].reduce((a, b) => a + b, 0);
  const vocab = uni.size;
  const p1 = (w: string) => ((uni.get(w) ?? 0) + 1) / (total + vocab);
  // bigram probabilities with the back-off weight of each history
  const p2seen = new Map<string, Map<string, number>>();
  const bow1 = new Map<string, number>();
  for (const [h, next] of bi) {
    let c = 0;
    for (const n of next.values()) c += n;
    const probs = new Map<string, number>();
    let mass = 0, lower = 0;
    for (const [w, n] of next) {
      const p = (n - DISCOUNT) / c;
      probs.set(w, p);
      mass += p;
      lower += p1(w);
    }
    p2seen.set(h, probs);
    bow1.set(h, (1 - mass) / Math.max(1e-9, 1 - lower));
  }
  const p2 = (h: string, w: string) => p2seen.get(h)?.get(w) ?? (bow1.get(h) ?? 1) * p1(w);
  const bow2 = new Map<string, number>();
  const p3lines: string[] = [];
  for (const [h, next] of tri) {
    const last = h.slice(h.indexOf(' ') + 1);
    let c = 0;
    for (const n of next.values()) c += n;
    let mass = 0, lower = 0;
    for (const [w, n] of next) {
      const p = (n - DISCOUNT) / c;
      mass += p;
      lower += p2(last, w);
      p3lines.push(`${log10(p)} ${h} ${w}`);
    }
    bow2.set(h, (1 - mass) / Math.max(1e-9, 1 - lower));
  }
  const lines: string[] = ['\\data\\', `ngram 1=${uni.size}`, `ngram 2=${[...p2seen.values()].reduce((a, m) => a + m.size, 0)}`, `ngram 3=${p3lines.length}`, '', '\\1-grams:'];
  for (const w of uni.keys()) lines.push(`${w === '<s>' ? '-99' : log10(p1(w))} ${w} ${log10(bow1.get(w) ?? 1)}`);
  lines.push('', '\\2-grams:');
  for (const [h, probs] of p2seen) for (const [w, p] of probs) lines.push(`${log10(p)} ${h} ${w} ${log10(bow2.get(`${h} ${w}`) ?? 1)}`);
  lines.push('', '\\3-grams:', ...p3lines, '', '\\end\\', '');
  return lines.join('\n');
}
