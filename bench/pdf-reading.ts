// Quality figures of the PDF reader (not a timing bench): narrated words, running-head words
// and contents-leader dots read aloud, words joined across a line-end hyphen. Compare two
// checkouts: node --import tsx bench/pdf-reading.ts /work/main test/fixtures/documents/libtasn1.pdf …
const root = process.argv[2]!;
const { readPdf } = await import(`${root}/src/documents/pdf.ts`);
for (const file of process.argv.slice(3)) {
  const t0 = performance.now();
  const doc = await readPdf(file);
  const ms = Math.round(performance.now() - t0);
  let words = 0, leaderWords = 0, headWords = 0, footNumbers = 0, twoBoxes = 0;
  for (const p of doc.pages) for (const b of p.blocks) {
    const ws = b.words.filter((w: any) => !w.silent);
    words += ws.length;
    for (let i = 0; i < ws.length; i++) if (/^[.·…]+$/.test(ws[i].text) && (/^[.·…]+$/.test(ws[i + 1]?.text ?? '') || /^[.·…]+$/.test(ws[i - 1]?.text ?? ''))) leaderWords++;
    for (const w of ws) { if (w.box.y < 0.08 * p.height) headWords++; if (w.box.y > 0.9 * p.height && /^\d+$/.test(w.text)) footNumbers++; if ((w.boxes ?? []).length > 1) twoBoxes++; }
  }
  console.log(JSON.stringify({ file: file.split('/').pop(), ms, pages: doc.pages.length, narratedWords: words, leaderDotWords: leaderWords, runningHeadWords: headWords, footPageNumbers: footNumbers, hyphenJoined: twoBoxes }));
}
process.exit(0);
