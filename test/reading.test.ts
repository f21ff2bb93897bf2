// Documents read the way a person reads them (issue 16): PDF reading order and furniture
// decided from the layout, and spoken forms that the voice reads while every output keeps the
// source words. Checked on a booklet drawn with pdf-lib (running heads, a repeated footer, a
// contents page with leaders, hyphenated line ends, two columns written right column first, a
// footnote written before the text, a figure caption), on two real PDFs nobody here wrote (a
// GNU library manual and a freedesktop.org specification), and through real eSpeak NG
// narration into the timeline, the EPUB (epubcheck), the offline reader and the highlight video.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadImage } from '@napi-rs/canvas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDocument, sourceWords, spokenText, type DocumentModel } from '../src/documents/model.ts';
import { buildEpub } from '../src/epub/build.ts';
import { ffmpeg } from '../src/media/ffmpeg.ts';
import { renderHighlightVideo } from '../src/video/highlight-video.ts';
import { readerData } from '../src/reader/build.ts';
import { readerPages } from '../src/reader/pages.ts';
import { sourceTimings, spokenForms } from '../src/speech/spoken-forms.ts';
import { phonemize } from '../src/speech/tts/espeak.ts';
import { tokenizeWords } from '../src/speech/words.ts';
import { epubcheck, inspectEpub } from './helpers/epub-inspect.ts';
import { fieldGuide, PAGE_H, PAGE_W, type FieldGuide } from './helpers/make-documents.ts';
import { DOCS, narrateForTest, type NarratedFiles } from './helpers/narrated.ts';

const PDF = 'application/pdf';
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-reading-'));
const CACHE = process.env.LECTERN_TEST_TTS_CACHE ?? path.join(os.tmpdir(), 'lectern-test-tts-cache');
afterAll(() => fs.rmSync(TMP, { recursive: true, force: true }));

const spokenWords = (doc: DocumentModel) => sourceWords(doc).map((s) => s.word.text);
const silentWords = (doc: DocumentModel) => doc.pages.flatMap((p) => p.blocks.flatMap((b) => b.words.filter((w) => w.silent).map((w) => w.text)));
/** Runs of three or more spoken "." tokens: contents leaders read aloud. */
const leaderRuns = (doc: DocumentModel) => {
  let runs = 0;
  for (const p of doc.pages) {
    for (const b of p.blocks) {
      let n = 0;
      for (const w of b.words) {
        n = !w.silent && /^[.·…]+$/u.test(w.text) ? n + 1 : 0;
        if (n === 3) runs++;
      }
    }
  }
  return runs;
};

describe('PDF layout: a booklet drawn with pdf-lib', () => {
  let guide: FieldGuide;
  let doc: DocumentModel;
  let file: string;
  beforeAll(async () => {
    guide = await fieldGuide();
    file = path.join(TMP, 'guide.pdf');
    fs.writeFileSync(file, guide.pdf);
    doc = await readDocument(file, PDF);
  });

  it('reads the text once, in reading order, without running heads, footers, leaders or page references', () => {
    expect(spokenWords(doc)).toEqual(guide.spoken);
    // The running heads (chapter titles change, numbers change) and the footer are furniture on every page after the first.
    for (const p of doc.pages.slice(1)) {
      const furniture = p.blocks.filter((b) => b.role === 'furniture').map((b) => b.text);
      expect(furniture).toContain('A Field Guide to Quiet Rooms');
      expect(furniture.some((t) => /^Chapter \d: .+ \d$/.test(t))).toBe(true);
    }
    const silent = silentWords(doc);
    expect(silent.filter((w) => w === 'Chapter')).toHaveLength(5);
    expect(silent.filter((w) => w === '.').length).toBeGreaterThan(100); // the leaders
    // The contents page: entries are read, their leaders and page numbers are not.
    expect(doc.pages[0]!.blocks.map(spokenText)).toEqual(['A Field Guide to Quiet Rooms', 'Contents', '1 Beginnings', '2 Two Columns', '3 Notes and Figures', '']);
  });

  it('joins a word hyphenated at a line end into one word with a box on each line, and keeps a printed compound', () => {
    const words = sourceWords(doc);
    const example = words.find((w) => w.word.text === 'example')!.word;
    expect(example.boxes).toHaveLength(2);
    expect(example.boxes![1]!.y).toBeGreaterThan(example.boxes![0]!.y + 10); // the second half on the next line
    expect(example.boxes![1]!.x).toBeCloseTo(72, 0);
    // "well-" + "known" at a line end stays "well-known": the booklet prints it so elsewhere.
    expect(words.filter((w) => w.word.text === 'well-known')).toHaveLength(2);
    expect(words.find((w) => w.word.text === 'well-known')!.word.boxes).toHaveLength(2);
    // Across the column break: "conver-" at the foot of the left column, "sation" atop the right one.
    const conversation = words.find((w) => w.word.text === 'conversation')!.word;
    expect(conversation.boxes!.map((b) => Math.round(b.x))).toEqual([expect.any(Number), 316]);
    expect(conversation.boxes![0]!.x).toBeLessThan(300);
  });

  it('reads the left column before the right one, footnotes after the body, the caption where it stands', () => {
    const page4 = doc.pages[3]!.blocks.filter((b) => !b.role).map(spokenText).join(' ');
    expect(page4.indexOf('The left column opens')).toBeLessThan(page4.indexOf('The right column comes second'));
    const page3 = doc.pages[2]!.blocks;
    const note = page3.findIndex((b) => b.role === 'footnote');
    expect(page3[note]!.text).toBe('1 Quiet here means no sound above a whisper.');
    expect(page3.slice(0, note).some((b) => b.text.includes('for years.'))).toBe(true);
    // The superscript mark after "quiet" is printed, not read.
    const mark = page3.flatMap((b) => b.words).find((w) => w.text === '1' && w.silent);
    expect(mark).toBeDefined();
    const page5 = doc.pages[4]!.blocks.filter((b) => b.role !== 'furniture');
    expect(page5.map((b) => b.role ?? b.kind)).toEqual(['heading', 'paragraph', 'caption', 'paragraph']);
  });
});

describe('real PDFs nobody here wrote', () => {
  it('GNU Libtasn1 manual (texinfo): no running head, page number or leader is read', async () => {
    const doc = await readDocument(path.join(DOCS, 'libtasn1.pdf'), PDF);
    expect(doc.pages).toHaveLength(36);
    // Running heads sit 49 pt from the top ("Chapter 3: Utilities 7", or a lone page number).
    const inHeadBand = sourceWords(doc).filter((s) => s.word.box!.y < 0.08 * PAGE_H);
    expect(inHeadBand).toEqual([]);
    const heads = doc.pages.flatMap((p) => p.blocks.filter((b) => b.role === 'furniture' && /^Chapter \d+:/.test(b.text)));
    expect(heads.length).toBeGreaterThanOrEqual(15);
    expect(leaderRuns(doc)).toBe(0);
    // The contents page reads the entries without their page numbers.
    expect(doc.pages[2]!.blocks.map(spokenText).filter(Boolean).join(' ')).toMatch(/^Table of Contents 1 Introduction 2 ASN\.1 structure handling 2\.1 ASN\.1 syntax\. 2\.2 Naming 2\.3 Simple parsing\. /);
    const page10 = doc.pages[9]!.blocks.filter((b) => spokenText(b));
    expect(page10[0]!.text).toBe('3.3 Invoking asn1Decoding');
    // Its two-column index is read column by column: A, F, H, then M, P, S, T.
    const index = doc.pages[34]!.blocks.filter((b) => b.kind === 'heading').map((b) => b.text);
    expect(index).toEqual(['Concept Index', 'A', 'F', 'H', 'M', 'P', 'S', 'T']);
  });

  it('freedesktop.org Shared MIME-info specification (DocBook): the title is read once, not on every page', async () => {
    const doc = await readDocument(path.join(DOCS, 'shared-mime-info-spec.pdf'), PDF);
    expect(doc.pages).toHaveLength(17);
    for (const p of doc.pages.slice(1)) {
      expect(p.blocks[0]).toMatchObject({ role: 'furniture', text: 'Shared MIME-info Database' });
      // The page number at the foot of the page is furniture too.
      expect(p.blocks.at(-1)).toMatchObject({ role: 'furniture', text: String(p.index + 1) });
    }
    const text = doc.pages.map((p) => p.blocks.map(spokenText).join(' ')).join(' ');
    // Read on the title page and where the text itself names the database (never as a running head).
    expect(text.match(/Shared MIME-info Database/g)!.length).toBeLessThan(4);
    expect(leaderRuns(doc)).toBe(0);
    expect(doc.pages[0]!.blocks[0]!.text).toBe('Shared MIME-info Database');
  });
});

describe('spoken forms', () => {
  it('rewrites what eSpeak NG misreads, one or more spoken tokens per source token', () => {
    const cases: Array<[string, string, string]> = [
      ['en-US', 'It costs $3.50 or $0.99, about 50% of $1.5 million.', 'It costs 3 dollars 50 or 99 cents, about 50% of 1.5 million dollars.'],
      ['en-US', 'On 2024-03-15 at 14:00 and 3:05 pm, in 1999 and 1914–1918.', 'On March 15th, 20 24 at 14 hundred and 3 oh 5 pm, in 19 99 and 19 14 to 19 18.'],
      ['en-US', 'Chapter IV. Henry VIII saw Fig. 3 on p. 12, No. 5 vs. the rest.', 'Chapter 4. Henry 8 saw figure 3 on page 12, number 5 versus the rest.'],
      ['en-US', 'See <https://www.gnu.org/software/libtasn1/> or mail help@gnu.org.', 'See <www.gnu.org / software / libtasn1> or mail help@gnu.org.'],
      ['de-DE', 'Es kostet 3,50 € am 15.03.2024 um 14:00, z. B. im Jahr 1999, Kapitel IV, S. 12, usw.', 'Es kostet 3 € 50 am 15. März 2024 um 14 Uhr, zum Beispiel im Jahr 19 hundert 99, Kapitel 4, Seite 12, und so weiter.'],
      ['fr-FR', 'Il coûte 3,50 € le 2024-03-15 à 14:00, p. ex. chapitre IV, n° 5.', 'Il coûte 3 € 50 le 15 mars 2024 à 14 heures, par exemple chapitre 4, numéro 5.'],
      ['es-ES', 'Cuesta 3,50 € el 2024-03-15 a las 14:00, pág. 12, capítulo IV.', 'Cuesta 3 € 50 el 15 de marzo de 2024 a las 14 horas, página 12, capítulo 4.'],
      // Left alone: what eSpeak reads right, and words that only look like numerals.
      ['en-US', 'I said 21st, 3.14 and 1,200 MIX CD.', 'I said 21st, 3.14 and 1,200 MIX CD.'],
      // Found on War of the Worlds and the live manual (data these rules were not written from).
      ['en-US', 'For my own part, I was busy. In the first book I have wandered. Part I', 'For my own part, I was busy. In the first book I have wandered. Part 1'],
      ['en-US', 'sudo -p "Password for $0:" /sbin/ifconfig $1 up', 'sudo -p "Password for $0:" /sbin/ifconfig $1 up'],
    ];
    for (const [lang, source, spoken] of cases) {
      const s = spokenForms(source, lang);
      expect(s.text, source).toBe(spoken);
      expect(s.counts).toHaveLength(tokenizeWords(source).length);
      expect(s.counts.reduce((a, b) => a + b, 0)).toBe(tokenizeWords(spoken).length);
    }
  });

  it('eSpeak NG says the spoken forms as a person reads the source (its own phonemes compared)', async () => {
    const same: Array<[string, string, string]> = [
      ['en-US', '$3.50', 'three dollars fifty'],
      ['en-US', 'in 1999', 'in nineteen ninety nine'],
      ['en-US', 'Chapter IV', 'Chapter four'],
      ['en-US', '14:00', 'fourteen hundred'],
      ['en-US', 'on 2024-03-15', 'on March fifteenth, twenty twenty four'],
      ['en-US', 'see p. 12', 'see page twelve'],
      ['de-DE', '3,50 €', 'drei Euro fünfzig'],
      ['de-DE', 'um 14:00', 'um 14 Uhr'], // unrewritten: "vierzehn Uhr null null"
      ['fr-FR', 'chapitre IV', 'chapitre quatre'],
    ];
    for (const [lang, source, words] of same) {
      const said = await phonemize(spokenForms(source, lang).text, lang);
      const expected = await phonemize(words, lang);
      expect(said.join(' '), `${lang} ${source}`).toBe(expected.join(' '));
      // And without the rewrite eSpeak says something else.
      expect((await phonemize(source, lang)).join(' '), `${lang} ${source} unrewritten`).not.toBe(expected.join(' '));
    }
  });

  it('through real synthesis: the timeline keeps "$3.50" while the voice says three words for it', async () => {
    const file = path.join(TMP, 'prices.md');
    fs.writeFileSync(file, 'The ticket cost $3.50 on 2024-03-15. The ticket cost three dollars fifty on March fifteenth, twenty twenty four.\n');
    const n = await narrateForTest(file, 'text/markdown', path.join(TMP, 'prices'), CACHE);
    const words = n.timeline.map((w) => w.word);
    expect(words.slice(0, 6)).toEqual(['The', 'ticket', 'cost', '$3.50', 'on', '2024-03-15.']);
    // "$3.50" lasts as long as "three dollars fifty" said in words (the same eSpeak voice): within 15 %.
    const dur = (i: number, k = 1) => n.timeline[i + k - 1]!.end - n.timeline[i]!.start;
    const spelled = words.indexOf('three');
    expect(Math.abs(dur(3) - dur(spelled, 3)) / dur(spelled, 3)).toBeLessThan(0.15);
    expect(Math.abs(dur(5) - dur(spelled + 4, 5)) / dur(spelled + 4, 5)).toBeLessThan(0.15);
  }, 120_000);

  it('folds spoken timings back onto the source words', () => {
    const s = spokenForms('It costs $3.50 today.', 'en-US');
    const spoken = tokenizeWords(s.text).map((t, i) => ({ word: t.word, start: i, end: i + 0.5 }));
    expect(sourceTimings('It costs $3.50 today.', s, spoken)).toEqual([
      { word: 'It', start: 0, end: 0.5 },
      { word: 'costs', start: 1, end: 1.5 },
      { word: '$3.50', start: 2, end: 4.5 },
      { word: 'today.', start: 5, end: 5.5 },
    ]);
  });
});

describe('every output of a narrated booklet keeps the source words (eSpeak NG)', () => {
  let guide: FieldGuide;
  let n: NarratedFiles;
  const out = path.join(TMP, 'narrated');
  beforeAll(async () => {
    guide = await fieldGuide();
    const file = path.join(TMP, 'booklet.pdf');
    fs.writeFileSync(file, guide.pdf);
    n = await narrateForTest(file, PDF, out, CACHE);
  }, 300_000);

  it('timeline: the spoken words only, in reading order', () => {
    const timeline = JSON.parse(fs.readFileSync(n.timelinePath, 'utf8')) as { words: Array<{ word: string; start: number; end: number; page: number }> };
    expect(timeline.words.map((w) => w.word)).toEqual(guide.spoken);
    expect(timeline.words.some((w) => /^Chapter$/.test(w.word))).toBe(false);
    for (let i = 1; i < timeline.words.length; i++) expect(timeline.words[i]!.start).toBeGreaterThanOrEqual(timeline.words[i - 1]!.start);
  });

  it('EPUB: epubcheck clean; running heads shown but never in an overlay; the hyphenated word one span', async () => {
    const epub = path.join(TMP, 'booklet.epub');
    await buildEpub({ outPath: epub, doc: n.doc, words: n.timeline, audioFile: n.audioPath, language: 'en-US' });
    const { summary, output } = await epubcheck(epub);
    expect(summary, output).toBe('Messages: 0 fatals / 0 errors / 0 warnings / 0 infos');
    const book = await inspectEpub(epub);
    const page2 = book.text('OEBPS/page-0002.xhtml');
    expect(page2).toContain('<p class="furniture" id="b2_0">Chapter 1: Beginnings 2</p>');
    expect(page2).toMatch(/<span id="w2_\d+">example<\/span>/);
    const clips = book.overlays.reduce((k, o) => k + o.clips.length, 0);
    expect(clips).toBe(guide.spoken.length);
    const contents = book.text('OEBPS/page-0001.xhtml');
    expect(contents).toMatch(/<span id="w1_\d+">Beginnings<\/span> \. \. \./); // the leaders are printed, not spans
  }, 180_000);

  it('offline reader: a word per timeline entry, two boxes for the hyphenated one, none for furniture', async () => {
    const pages = await readerPages(n.doc, { imageDir: path.join(TMP, 'reader-pages') });
    const data = readerData({ title: 'Booklet', author: null, language: 'en', audioFile: n.audioPath, words: n.timeline, duration: 1, pages });
    expect(data.words).toHaveLength(guide.spoken.length);
    const shown = data.pages.flatMap((p) => p.blocks.flatMap((b) => b.words));
    expect(shown.find((w) => w.t === 'example')!.b).toHaveLength(2);
    expect(shown.filter((w) => w.t === 'Chapter').every((w) => w.s === 1 && !w.b && w.i === undefined)).toBe(true);
  }, 120_000);

  it('highlight video: while "example" is read, both of its boxes are lit', async () => {
    const video = path.join(TMP, 'booklet.mp4');
    await renderHighlightVideo({ doc: n.doc, timeline: n.timeline, audioPath: n.audioPath, width: 1280, height: 720, fps: 12, outPath: video });
    const i = n.timeline.findIndex((w) => w.word === 'example');
    const boxes = sourceWords(n.doc)[i]!.word.boxes!;
    const png = path.join(TMP, 'example.png');
    await ffmpeg(['-y', '-i', video, '-vf', 'fps=48', '-ss', ((n.timeline[i]!.start + n.timeline[i]!.end) / 2).toFixed(3), '-frames:v', '1', png]);
    const img = await loadImage(fs.readFileSync(png));
    const { createCanvas } = await import('@napi-rs/canvas');
    const c = createCanvas(img.width, img.height);
    c.getContext('2d').drawImage(img, 0, 0);
    const scale = 1280 / PAGE_W;
    for (const b of boxes) {
      const d = c.getContext('2d').getImageData(Math.round(b.x * scale) + 2, Math.round(b.y * scale) + 2, Math.round(b.width * scale) - 4, Math.round(b.height * scale) - 4).data;
      let yellow = 0;
      for (let k = 0; k < d.length; k += 4) if (d[k]! > 200 && d[k + 1]! > 150 && d[k + 2]! < 130) yellow++;
      expect(yellow / (d.length / 4)).toBeGreaterThan(0.2);
    }
    // Nothing else on the page is lit: the two boxes hold all the yellow.
    const all = c.getContext('2d').getImageData(0, 0, img.width, img.height).data;
    let lit = 0;
    for (let k = 0; k < all.length; k += 4) if (all[k]! > 200 && all[k + 1]! > 150 && all[k + 2]! < 130) lit++;
    const area = boxes.reduce((a, b) => a + (b.width * scale + 12) * (b.height * scale + 12), 0);
    expect(lit).toBeLessThan(area);
  }, 180_000);
});
