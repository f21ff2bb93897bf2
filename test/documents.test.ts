// Document extraction on the real test documents and on small documents made here with
// known contents (exact words, positions and outline), plus sentence splitting for speech.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadImage, createCanvas } from '@napi-rs/canvas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { declaredLanguage, DocumentError, normaliseBox, readDocument, withFileSource, wordCount, type ByteSource, type DocumentModel } from '../src/documents/model.ts';
import { closeRendering, MAX_LANGUAGE_READ, readPdfLanguage, renderPage } from '../src/documents/pdf.ts';
import { chunkSentences, splitSentences } from '../src/speech/sentences.ts';
import { tokenizeWords, utf8Bytes } from '../src/speech/words.ts';
import { makeEpub3, makePdf, makeZip, PAGE_H, PAGE_W } from './helpers/make-documents.ts';

const DOCS = path.join(import.meta.dirname, 'fixtures', 'documents');
const PDF = 'application/pdf';
const EPUB = 'application/epub+zip';
let tmp: string;
const write = (name: string, data: Buffer | string) => {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, data);
  return p;
};

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-docs-'));
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Every block's words are exactly its tokens: the identity the timeline relies on. */
function expectConsistent(doc: DocumentModel) {
  for (const p of doc.pages) {
    for (const b of p.blocks) {
      expect(b.words.map((w) => w.text)).toEqual(tokenizeWords(b.text).map((t) => t.word));
      expect(b.text).toBe(b.text.replace(/\s+/g, ' ').trim());
    }
  }
}

function expectBoxesInside(doc: DocumentModel) {
  let n = 0;
  for (const p of doc.pages) {
    for (const b of p.blocks) {
      for (const w of b.words) {
        for (const box of w.boxes!) {
          expect(box.x).toBeGreaterThanOrEqual(0);
          expect(box.y).toBeGreaterThanOrEqual(0);
          expect(box.width).toBeGreaterThan(0);
          expect(box.height).toBeGreaterThan(0);
          expect(box.x + box.width).toBeLessThanOrEqual(p.width! + 0.01);
          expect(box.y + box.height).toBeLessThanOrEqual(p.height! + 0.01);
          n++;
        }
      }
    }
  }
  return n;
}

const allWords = (doc: DocumentModel) => doc.pages.flatMap((p) => p.blocks.flatMap((b) => b.words.map((w) => w.text)));

describe('PDF (live-manual.en.pdf)', () => {
  let doc: DocumentModel;
  beforeAll(async () => {
    doc = await readDocument(path.join(DOCS, 'live-manual.en.pdf'), PDF);
  });
  afterAll(() => closeRendering(doc));

  it('reads pages, metadata and the outline', () => {
    expect(doc.format).toBe('pdf');
    expect(doc.pages).toHaveLength(64);
    expect(doc.pages[0]).toMatchObject({ index: 0, width: 595.28, height: 841.89 });
    expect(doc.title).toBe('SiSU: - Live Systems Manual');
    expect(doc.author).toBe('Live Systems Project <debian-live@lists.debian.org>');
    expect(doc.toc.length).toBe(187);
    expect(doc.toc.slice(0, 4)).toEqual([
      { title: 'About', page: 8, level: 1 },
      { title: 'About this manual', page: 9, level: 1 },
      { title: '1. About this manual', page: 9, level: 2 },
      { title: '1.1 For the impatient', page: 9, level: 3 },
    ]);
    expect(doc.toc.every((t) => t.page >= 0 && t.page < 64)).toBe(true);
  });

  it('extracts words in order with boxes inside the page', () => {
    expectConsistent(doc);
    const words = allWords(doc);
    expect(words[0]).toBe('http://www.gnu.org/licenses/');
    expect(words.at(-1)).toBe('http://www.gnu.org/licenses/');
    // The contents page: headings and entries in reading order, the page number after each.
    const contents = doc.pages[2]!.blocks.map((b) => b.text);
    expect(contents[0]).toBe('About 2 About this manual 3');
    expect(contents[1]).toBe('1. About this manual 3');
    expect(doc.pages[2]!.blocks[0]!.kind).toBe('heading');
    expect(expectBoxesInside(doc)).toBe(wordCount(doc));
    // "About" on the contents page: 72 pt from the left, a 14.3 pt heading 132.5 pt from the top.
    const about = doc.pages[2]!.blocks[0]!.words[0]!;
    expect(about.box!.x).toBeCloseTo(72, 1);
    expect(about.box!.y).toBeGreaterThan(125);
    expect(about.box!.y).toBeLessThan(140);
    expect(about.box!.width).toBeCloseTo(40.7, 0);
    const norm = normaliseBox(about.box!, doc.pages[2]!);
    expect(norm.x).toBeCloseTo(72 / 595.28, 3);
  });

  it('renders a page at 1400 px with dark text pixels inside the word boxes and white outside', async () => {
    const png = await renderPage(doc, 2, 1400);
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    const img = await loadImage(png);
    expect(img.width).toBe(1400);
    expect(img.height).toBe(Math.round((841.89 * 1400) / 595.28));
    const canvas = createCanvas(img.width, img.height);
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const scale = 1400 / 595.28;
    const dark = (x: number, y: number, w: number, h: number) => {
      const data = ctx.getImageData(Math.round(x * scale), Math.round(y * scale), Math.round(w * scale), Math.round(h * scale)).data;
      let n = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i]! < 128 && data[i + 3]! > 0) n++;
      return n / (data.length / 4);
    };
    const box = doc.pages[2]!.blocks[0]!.words[0]!.box!;
    expect(dark(box.x, box.y, box.width, box.height)).toBeGreaterThan(0.1);
    expect(dark(300, 160, 150, 80)).toBe(0); // empty space between entries
    await expect(renderPage(doc, 64, 100)).rejects.toThrow(/no page 64/);
  });
});

describe('PDF made here', () => {
  const lines = [
    [
      { text: 'A Small Report', x: 72, y: 700, size: 24 },
      { text: 'The first paragraph has an exam-', x: 72, y: 660, size: 12 },
      { text: 'ple of a hyphen at a line end.', x: 72, y: 646, size: 12 },
      { text: 'A second paragraph stands apart.', x: 72, y: 610, size: 12 },
      { text: '1', x: 300, y: 40, size: 10 }, // page numbers in the margin are not read
    ],
    [
      { text: 'Results', x: 72, y: 700, size: 24 },
      { text: 'Everything worked (mostly), the end.', x: 90, y: 660, size: 12 },
      { text: '42', x: 300, y: 400, size: 12 }, // a number in the body is
      { text: '- 2 -', x: 300, y: 40, size: 10 },
    ],
  ];

  it('joins hyphenated words, splits blocks at gaps and size changes, reads the outline and boxes', async () => {
    const file = write('small.pdf', makePdf({ pages: lines, title: 'Small Report', author: 'Ada Tester', outline: [{ title: 'Introduction', page: 0 }, { title: 'Results', page: 1 }] }));
    const doc = await readDocument(file, PDF);
    expectConsistent(doc);
    expect(doc).toMatchObject({ title: 'Small Report', author: 'Ada Tester', toc: [{ title: 'Introduction', page: 0, level: 1 }, { title: 'Results', page: 1, level: 1 }] });
    // Page numbers in the margin stay on the page as silent furniture (shown, never read).
    expect(doc.pages.map((p) => p.blocks.map((b) => [b.kind, b.text, b.role ?? null]))).toEqual([
      [
        ['heading', 'A Small Report', null],
        ['paragraph', 'The first paragraph has an example of a hyphen at a line end.', null],
        ['paragraph', 'A second paragraph stands apart.', null],
        ['paragraph', '1', 'furniture'],
      ],
      [
        ['heading', 'Results', null],
        ['paragraph', 'Everything worked (mostly), the end.', null],
        ['paragraph', '42', null],
        ['paragraph', '- 2 -', 'furniture'],
      ],
    ]);
    expect(doc.pages.flatMap((p) => p.blocks.filter((b) => b.role === 'furniture').flatMap((b) => b.words.map((w) => w.silent)))).toEqual([true, true, true, true]);
    const example = doc.pages[0]!.blocks[1]!.words[5]!;
    expect(example.text).toBe('example');
    expect(example.boxes).toHaveLength(2);
    expect(example.boxes![1]!.x).toBeCloseTo(72, 1); // "ple" starts the next line
    expect(example.boxes![1]!.y).toBeGreaterThan(example.boxes![0]!.y);
    // Baseline 660 pt from the bottom → the box top is 792 - 660 - 0.8 × 12 from the top.
    const the = doc.pages[0]!.blocks[1]!.words[0]!.box!;
    expect(the.x).toBeCloseTo(72, 1);
    expect(the.y).toBeCloseTo(PAGE_H - 660 - 0.8 * 12, 1);
    expect(the.height).toBeCloseTo(12 * 1.02, 1);
    expect(doc.pages[1]!.blocks[1]!.words[0]!.box!.x).toBeCloseTo(90, 1);
    expect(expectBoxesInside(doc)).toBe(wordCount(doc) + 1 + 4); // one word in two parts, four silent words
    expect(doc.pages[0]).toMatchObject({ width: PAGE_W, height: PAGE_H });
    // Helvetica is not embedded: the page renders with pdfjs's standard font data.
    const img = await loadImage(await renderPage(doc, 0, 700));
    expect(img.width).toBe(700);
    await closeRendering(doc);
  });

  it("reads a large PDF's declared language in ranges, never the file whole; a corrupt or encrypted one fails as readDocument does", async () => {
    const big = write('big.pdf', makePdf({ pages: lines, language: 'de-AT', padBytes: 60 * 1024 * 1024 }));
    const stats = { bytesRead: 0 };
    expect(await withFileSource(big, (src) => readPdfLanguage(src, stats))).toBe('de-AT');
    expect(fs.statSync(big).size).toBeGreaterThan(60 * 1024 * 1024);
    expect(stats.bytesRead).toBeLessThan(1024 * 1024); // the trailer, the cross-reference table and the catalog
    // A broken cross-reference table makes pdf.js scan the file: the read stops at its bound.
    const pdfBytes = fs.readFileSync(big);
    const at = pdfBytes.lastIndexOf('startxref');
    const broken = write('broken-xref.pdf', Buffer.concat([pdfBytes.subarray(0, at), Buffer.from('startxref\n123\n%%EOF\n')]));
    const brokenStats = { bytesRead: 0 };
    await expect(withFileSource(broken, (src) => readPdfLanguage(src, brokenStats))).rejects.toThrow(/reading the PDF's language would take more than \d+ bytes of it/);
    expect(brokenStats.bytesRead).toBeLessThanOrEqual(MAX_LANGUAGE_READ);
    // the upload path takes that as "declares none": the job's pipeline reads the whole PDF and says what it finds
    expect(await declaredLanguage(write('none.pdf', makePdf({ pages: lines })), PDF)).toBeNull();
    await expect(declaredLanguage(write('junk.pdf', '%PDF-1.4\nthis is not a PDF\n'), PDF)).rejects.toThrow(/not a readable PDF/);
    await expect(declaredLanguage(write('locked.pdf', makePdf({ pages: lines, encrypted: true })), PDF)).rejects.toThrow(/encrypted with a password/);
  });

  it('a scanned PDF, an encrypted one and a corrupt one fail with a one-line reason', async () => {
    const scanned = write('scanned.pdf', makePdf({ pages: lines, scanned: true }));
    await expect(readDocument(scanned, PDF)).rejects.toThrow(/no text layer .*OCR/);
    const encrypted = write('encrypted.pdf', makePdf({ pages: lines, encrypted: true }));
    await expect(readDocument(encrypted, PDF)).rejects.toThrow(/encrypted with a password/);
    const corrupt = write('corrupt.pdf', Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(4000, 0x41)]));
    const err = await readDocument(corrupt, PDF).catch((e: Error) => e);
    expect(err).toBeInstanceOf(DocumentError);
    expect((err as Error).message).toMatch(/not a readable PDF/);
    expect((err as Error).message).not.toContain('\n');
  });
});

describe('EPUB', () => {
  it('War of the Worlds (EPUB 2, NCX): spine order, chapters, TOC, metadata, first and last words', async () => {
    const doc = await readDocument(path.join(DOCS, 'war-of-the-worlds.epub'), EPUB);
    expectConsistent(doc);
    expect(doc).toMatchObject({ format: 'epub', title: 'The War of the Worlds', author: 'H. G. Wells', language: 'en' });
    expect(doc.pages).toHaveLength(35);
    const hrefs = doc.pages.map((p) => p.href);
    expect(hrefs.slice(0, 4)).toEqual(['OPS/cover.xml', 'OPS/title.xml', 'OPS/about.xml', 'OPS/main0.xml']);
    expect(hrefs.filter((h) => /main([1-9]|[12]\d)\.xml$/.test(h!))).toHaveLength(29);
    const parts = doc.toc.filter((t) => /^(Part|Chapter) /.test(t.title));
    expect(parts).toHaveLength(29);
    expect(doc.toc.find((t) => t.title === 'Part 1 - The Coming of the Martians')).toMatchObject({ level: 1 });
    const ch1 = doc.toc.find((t) => t.title === 'Chapter 1 - The Eve of the War')!;
    expect(ch1.level).toBe(2);
    expect(doc.pages[ch1.page]!.href).toBe('OPS/main2.xml');
    expect(doc.pages[ch1.page]!.blocks[1]!.text).toMatch(/^No one would have believed in the last years of the nineteenth century/);
    const epigraph = doc.pages[3]!.blocks.map((b) => b.text);
    expect(epigraph[0]).toBe('But who shall dwell in these worlds if they be inhabited?…');
    const last = doc.pages.find((p) => p.href === 'OPS/main29.xml')!;
    expect(last.blocks[0]!).toMatchObject({ text: 'Chapter 10 The Epilogue' });
    expect(last.blocks.at(-1)!.words.slice(-4).map((w) => w.text)).toEqual(['me,', 'among', 'the', 'dead.']);
    expect(wordCount(doc)).toBeGreaterThan(60_000);
    expect(doc.pages.every((p) => p.width === undefined && p.blocks.every((b) => b.words.every((w) => !w.box)))).toBe(true);
  });

  it('the live manual (a spine listing one file twice, SiSU paragraph numbers, nested NCX)', async () => {
    const doc = await readDocument(path.join(DOCS, 'live-manual.en.epub'), EPUB);
    expectConsistent(doc);
    expect(doc).toMatchObject({ title: 'Live Systems Manual', author: 'Live Systems Project <debian-live@lists.debian.org>', language: 'en' });
    expect(doc.pages).toHaveLength(47);
    expect(new Set(doc.pages.map((p) => p.href)).size).toBe(47);
    expect(doc.toc).toHaveLength(190);
    // TOC links with a fragment point at the block their anchor starts.
    const impatient = doc.toc.find((t) => t.title === '1.1 For the impatient')!;
    expect(impatient).toMatchObject({ level: 4, block: 4 });
    expect(doc.pages[impatient.page]!.blocks[impatient.block!]!.text).toBe('1.1 For the impatient');
    const withBlock = doc.toc.filter((t) => t.block !== undefined);
    expect(withBlock.length).toBe(143);
    expect(withBlock.every((t) => doc.pages[t.page]!.blocks[t.block!]!.text.startsWith(t.title.split(' ')[0]!))).toBe(true);
    const about = doc.pages.find((p) => p.href === 'OEBPS/about-manual.xhtml')!;
    expect(about.blocks[0]).toMatchObject({ kind: 'heading', level: 1, text: '1. About this manual' });
    // The paragraph number "5" (a <label>) is not read; inline markup and entities are.
    expect(about.blocks[1]!.text).toMatch(/^This manual serves as a single access point .* "stretch" release\. An up-to-date version can always be found at <http:\/\/debian-live\.alioth\.debian\.org\/>$/);
  });

  it('EPUB 3 with a nav document; broken books fail with a reason', async () => {
    const file = write(
      'book.epub',
      makeEpub3({
        title: 'Two Short Chapters',
        author: 'Ada Tester',
        language: 'en-GB',
        chapters: [
          { title: 'Beginnings', paragraphs: ['It was a <em>bright</em>&nbsp;day &amp; a calm one.', 'Line one<br/>line two.'] },
          { title: 'Endings', paragraphs: ['<span>All</span> done.'] },
        ],
      }),
    );
    const doc = await readDocument(file, EPUB);
    expectConsistent(doc);
    expect(doc).toMatchObject({ title: 'Two Short Chapters', author: 'Ada Tester', language: 'en-GB' });
    expect(doc.toc).toEqual([
      { title: 'Beginnings', page: 0, level: 1 },
      { title: 'Endings', page: 1, level: 1 },
    ]);
    expect(doc.pages.map((p) => p.blocks.map((b) => b.text))).toEqual([
      ['Beginnings', 'It was a bright day & a calm one.', 'Line one line two.'],
      ['Endings', 'All done.'],
    ]);

    const drm = write(
      'drm.epub',
      makeEpub3({
        title: 'Locked',
        author: 'A',
        language: 'en',
        chapters: [{ title: 'One', paragraphs: ['Secret.'] }],
        extra: [['META-INF/encryption.xml', '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData><enc:CipherReference URI="OEBPS/text/ch1.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>']],
      }),
    );
    await expect(readDocument(drm, EPUB)).rejects.toThrow(/DRM-protected/);
    const noContainer = write('nocontainer.epub', makeZip([['mimetype', 'application/epub+zip'], ['OEBPS/a.xhtml', '<html/>']]));
    await expect(readDocument(noContainer, EPUB)).rejects.toThrow(/no META-INF\/container\.xml/);
    const notZip = write('notzip.epub', Buffer.alloc(2000, 7));
    await expect(readDocument(notZip, EPUB)).rejects.toThrow(/not a readable EPUB/);
  });
});

describe('Markdown and text into the model', () => {
  it("reads a large EPUB's declared language from its central directory and package document alone", async () => {
    const book = makeEpub3({ title: 'Le livre', author: 'A. Auteur', language: 'fr_CA', chapters: [{ title: 'Un', paragraphs: ['Il était une fois.'] }], extra: [['OEBPS/audio/big.bin', 'x'.repeat(40 * 1024 * 1024)]] });
    const file = write('big.epub', book);
    let bytesRead = 0;
    const counted = (src: ByteSource): ByteSource => ({ size: src.size, read: async (a, b) => { const c = await src.read(a, b); bytesRead += c.length; return c; } });
    expect(await withFileSource(file, (src) => declaredLanguage(counted(src), EPUB))).toBe('fr-CA');
    expect(bytesRead).toBeLessThan(2 * 1024 * 1024); // of 40 MB
    expect(await declaredLanguage(file, EPUB)).toBe('fr-CA');
    await expect(declaredLanguage(write('broken.epub', Buffer.from('PK\x03\x04 not really a zip')), EPUB)).rejects.toThrow(/not a readable EPUB/);
  });

  it('keeps headings as blocks with a TOC pointing at them', async () => {
    const file = write('notes.md', '# Title\n\nSome *emphasis* and a [link](http://x.org).\n\n## Part two\n\n- item one\n- item two\n\n> quoted words\n');
    const doc = await readDocument(file, 'text/markdown; charset=utf-8');
    expectConsistent(doc);
    expect(doc.format).toBe('markdown');
    expect(doc.title).toBe('Title');
    expect(doc.pages).toHaveLength(1);
    expect(doc.pages[0]!.blocks.map((b) => [b.kind, b.text])).toEqual([
      ['heading', 'Title'],
      ['paragraph', 'Some emphasis and a link.'],
      ['heading', 'Part two'],
      ['item', 'item one'],
      ['item', 'item two'],
      ['quote', 'quoted words'],
    ]);
    expect(doc.toc).toEqual([
      { title: 'Title', page: 0, block: 0, level: 1 },
      { title: 'Part two', page: 0, block: 2, level: 2 },
    ]);
    const txt = await readDocument(write('plain.txt', 'One para.\n\nTwo\nlines.'), 'text/plain');
    expect(txt.pages[0]!.blocks.map((b) => b.text)).toEqual(['One para.', 'Two lines.']);
    await expect(readDocument(file, 'image/png')).rejects.toThrow(/cannot read image\/png/);
  });
});

describe('text for speech', () => {
  it('keeps abbreviations, numbers, URLs, quotes and numbered headings inside their sentence', () => {
    expect(splitSentences('"Stop!" he said. Then he left.')).toEqual(['"Stop!" he said.', 'Then he left.']);
    expect(splitSentences('Visit https://example.com/a.b?c=1. Then go.')).toEqual(['Visit https://example.com/a.b?c=1.', 'Then go.']);
    expect(splitSentences('It costs $1,200.50 in 1898. Mr. Smith and Dr. J. R. Jones agreed, e.g. on pp. 4–5. Done.')).toEqual([
      'It costs $1,200.50 in 1898.',
      'Mr. Smith and Dr. J. R. Jones agreed, e.g. on pp. 4–5.',
      'Done.',
    ]);
    expect(splitSentences('1.1 For the impatient. We go.')).toEqual(['1.1 For the impatient.', 'We go.']);
    expect(splitSentences('He said “Go.” Then wait… and see. The U.S. Army won?! Yes.')).toEqual(['He said “Go.”', 'Then wait… and see.', 'The U.S. Army won?!', 'Yes.']);
  });

  it('chunks stay under the byte limit and keep every source word', () => {
    const text = 'Ça commence ici, avec des mots accentués; puis une très longue phrase sans point qui continue encore et encore — jusqu’à la fin. Court.';
    const chunks = chunkSentences(splitSentences(text), 40);
    for (const c of chunks) expect(utf8Bytes(c)).toBeLessThanOrEqual(40);
    expect(chunks.join(' ').split(' ')).toEqual(text.split(' '));
  });
});
