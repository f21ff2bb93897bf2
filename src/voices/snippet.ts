// Preview text: a representative 200–400 character stretch of a document's prose, cut at
// sentence boundaries and skipping front matter (title pages, contents, copyright and
// licence notices); or a generic sentence in the requested language.

export const SNIPPET_MIN = 200;
export const SNIPPET_MAX = 400;

// Blocks that are about the book rather than the book.
const FRONT_MATTER = /\b(copyright|all rights reserved|isbn|table of contents|project gutenberg|e-?book|licen[cs]e[ds]?|permission is granted|published by|printed in|first (edition|published)|dedicated to|acknowledg(e?ments?)|trademarks?)\b|©/i;

function letterRatio(s: string): number {
  const chars = s.replace(/\s/g, '');
  if (!chars) return 0;
  return (chars.match(/\p{L}/gu)?.length ?? 0) / chars.length;
}

/** Running prose: long enough, ends a sentence, mostly letters, real words, not shouting, not a contents line. */
export function isProse(block: string): boolean {
  const b = block.trim();
  if (b.length < 60) return false;
  if (!/[.!?…。！？]["'”’»)\]]*$/u.test(b)) return false;
  if (FRONT_MATTER.test(b)) return false;
  if (/\.{4,}|…{2,}|(\.\s){4,}/.test(b)) return false; // dot leaders of a contents page
  if (letterRatio(b) < 0.75) return false;
  const words = b.split(/\s+/);
  if (words.length < 8) return false;
  const numeric = words.filter((w) => /^\(?[\divxlc]+[.)]?$/i.test(w)).length;
  if (numeric / words.length > 0.15) return false;
  const letters = b.match(/\p{L}/gu) ?? [];
  const upper = b.match(/\p{Lu}/gu)?.length ?? 0;
  if (letters.length > 0 && upper / letters.length > 0.5) return false;
  const avg = letters.length / words.length;
  return avg >= 2.5 && avg <= 12;
}

export function splitSentences(text: string, language = 'en'): string[] {
  let seg: Intl.Segmenter;
  try {
    seg = new Intl.Segmenter(language, { granularity: 'sentence' });
  } catch {
    seg = new Intl.Segmenter('en', { granularity: 'sentence' });
  }
  return [...seg.segment(text)].map((s) => s.segment.trim()).filter(Boolean);
}

/**
 * The first window of whole consecutive sentences, inside a run of prose blocks, that is
 * 200–400 characters long. Falls back to the longest window under 400, then to the first
 * prose sentence cut at a word boundary. Null when the document has no prose at all.
 */
export function pickSnippet(blocks: string[], language = 'en'): string | null {
  // Runs of consecutive prose blocks; a window never jumps over a heading or a caption.
  const runs: string[][] = [];
  let cur: string[] = [];
  for (const raw of blocks) {
    const b = raw.replace(/\s+/g, ' ').trim();
    if (isProse(b)) cur.push(...splitSentences(b, language));
    else if (cur.length) {
      runs.push(cur);
      cur = [];
    }
  }
  if (cur.length) runs.push(cur);
  if (runs.length === 0) return null;

  let best: string | null = null;
  for (const sentences of runs) {
    for (let i = 0; i < sentences.length; i++) {
      let s = '';
      for (let j = i; j < sentences.length; j++) {
        const next = s ? `${s} ${sentences[j]}` : sentences[j]!;
        if (next.length > SNIPPET_MAX) break;
        s = next;
        if (s.length >= SNIPPET_MIN) return s;
      }
      if (s && (!best || s.length > best.length)) best = s;
    }
  }
  if (best && best.length >= 40) return best;
  const first = runs[0]![0]!;
  if (first.length <= SNIPPET_MAX) return best ?? first;
  const cut = first.slice(0, SNIPPET_MAX);
  return `${cut.slice(0, Math.max(cut.lastIndexOf(' '), SNIPPET_MIN)).replace(/[,;:]$/, '')}…`;
}

// One natural sentence per language, for samples and for previews with no text or document.
const GENERIC: Record<string, string> = {
  en: 'Hello! This is how I sound when I read your documents aloud, one sentence at a time.',
  de: 'Hallo! So klinge ich, wenn ich Ihre Dokumente Satz für Satz vorlese.',
  fr: 'Bonjour ! Voici ma voix quand je lis vos documents à voix haute, phrase après phrase.',
  es: '¡Hola! Así sueno cuando leo sus documentos en voz alta, frase por frase.',
  it: 'Ciao! Ecco come suono quando leggo ad alta voce i tuoi documenti, una frase alla volta.',
  pt: 'Olá! É assim que eu soo quando leio os seus documentos em voz alta, frase a frase.',
  nl: 'Hallo! Zo klink ik wanneer ik uw documenten zin voor zin voorlees.',
  sv: 'Hej! Så här låter jag när jag läser upp dina dokument, en mening i taget.',
  pl: 'Dzień dobry! Tak brzmię, gdy czytam na głos twoje dokumenty, zdanie po zdaniu.',
  ru: 'Здравствуйте! Так звучит мой голос, когда я читаю ваши документы вслух, предложение за предложением.',
  tr: 'Merhaba! Belgelerinizi cümle cümle sesli okurken sesim böyle çıkıyor.',
  cmn: '你好！这就是我为你朗读文档时的声音，一句一句地读。',
  zh: '你好！这就是我为你朗读文档时的声音，一句一句地读。',
  ja: 'こんにちは。これは、あなたの文書を一文ずつ読み上げるときの私の声です。',
  hi: 'नमस्ते! जब मैं आपके दस्तावेज़ एक-एक वाक्य करके पढ़ता हूँ, तो मेरी आवाज़ ऐसी सुनाई देती है।',
  ar: 'مرحبا! هكذا يبدو صوتي عندما أقرأ مستنداتك بصوت عال، جملة بعد جملة.',
};

/** A generic preview sentence for a BCP-47 language (exact primary subtag), or null when we have none. */
export function genericSentence(language: string): string | null {
  const primary = language.toLowerCase().split(/[-_]/)[0]!;
  return GENERIC[primary] ?? null;
}

export const GENERIC_LANGUAGES = Object.keys(GENERIC);
