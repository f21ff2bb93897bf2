// Spoken forms: the text a voice is given, rewritten from the source text so that it is read
// the way a person reads it ("$3.50" → "3 dollars 50", "14:00" → "14 Uhr", "Chapter IV" →
// "Chapter 4", "2024-03-15" → "March 15th, 20 24"), while every timing still belongs to a
// SOURCE word: each source token becomes one or more spoken tokens, and the timings of those
// are folded back onto it (the highlight stays on "$3.50" while the voice says "three dollars
// fifty").
//
// eSpeak NG (which also phonemizes for Piper) already expands numbers, ordinals ("21st"),
// decimals, percentages, e-mail addresses and many abbreviations in each of its languages;
// these rules cover only what it gets wrong (measured per language, see the README): a
// currency symbol before the amount, decimal money, "HH:00", numeric and ISO dates, years
// in English and German, Roman numerals (eSpeak says "roman four" / "römisch vier"), URL
// schemes, and abbreviations it spells out letter by letter. Languages without a table here
// get the language-neutral rules (money order, dates through the platform's own month names,
// Roman numerals, URLs).
import type { WordTiming } from './types.ts';
import { tokenizeWords } from './words.ts';

export interface SpokenText {
  /** What the voice is given. */
  text: string;
  /** For each source token (tokenizeWords of the source), how many spoken tokens it became (≥ 1). */
  counts: number[];
}

interface Lang {
  /** Primary subtag, lower case. */
  code: string;
  /** Month first in numeric dates (en-US). */
  monthFirst: boolean;
  decimal: string;
  tag: string;
}

// Words after which a Roman numeral is a number ("Chapter IV", "Kapitel IV").
const SECTION_WORDS: Record<string, string[]> = {
  en: ['chapter', 'part', 'book', 'volume', 'vol.', 'section', 'appendix', 'act', 'scene', 'canto', 'article', 'lesson', 'unit', 'phase', 'stage', 'level', 'type', 'class', 'war', 'no.'],
  de: ['kapitel', 'teil', 'band', 'buch', 'abschnitt', 'anhang', 'akt', 'szene', 'artikel', 'lektion', 'bd.', 'kap.'],
  fr: ['chapitre', 'partie', 'livre', 'tome', 'section', 'annexe', 'acte', 'scène', 'article', 'leçon', 'chap.'],
  es: ['capítulo', 'parte', 'libro', 'tomo', 'sección', 'apéndice', 'acto', 'escena', 'artículo', 'lección', 'cap.'],
  it: ['capitolo', 'parte', 'libro', 'tomo', 'sezione', 'appendice', 'atto', 'scena', 'articolo', 'lezione', 'cap.'],
  pt: ['capítulo', 'parte', 'livro', 'tomo', 'seção', 'secção', 'apêndice', 'ato', 'acto', 'cena', 'artigo', 'lição', 'cap.'],
  nl: ['hoofdstuk', 'deel', 'boek', 'sectie', 'bijlage', 'akte', 'scène', 'artikel', 'les'],
};

// What is said for a whole hour ("14:00"): eSpeak reads the minutes "zero zero".
const HOUR_WORD: Record<string, string> = { de: 'Uhr', fr: 'heures', es: 'horas', it: '', pt: 'horas', nl: 'uur' };

// Words after which a four-digit number is a year (English and German, where eSpeak reads
// 1999 as "one thousand nine hundred…"; the other languages' readings are the spoken ones).
const YEAR_BEFORE: Record<string, Set<string>> = {
  en: new Set('in since by from until till to of year circa c. around before after during early late mid and or summer winter spring autumn fall'.split(' ')),
  de: new Set('im jahr jahre jahres seit bis von ab um anno vor nach zwischen und oder sommer winter frühjahr herbst'.split(' ')),
};
const YEAR_AFTER = new Set(['bc', 'ad', 'bce', 'ce', 'v.', 'n.', 'chr.', 'av.', 'ap.', 'j.-c.']);

/** Abbreviations eSpeak spells or misreads. `num`: only before a number ("No. 5", "p. 12"). */
interface Abbrev {
  words: string[];
  say: string[];
  num?: boolean;
}
const ABBREVIATIONS: Record<string, Abbrev[]> = {
  en: [
    { words: ['vs.'], say: ['versus'] },
    { words: ['vs'], say: ['versus'] },
    { words: ['approx.'], say: ['approximately'] },
    { words: ['i.e.'], say: ['that is'] },
    { words: ['i.e.,'], say: ['that is,'] },
    { words: ['cf.'], say: ['compare'] },
    { words: ['Inc.'], say: ['Incorporated'] },
    { words: ['Jr.'], say: ['Junior'] },
    { words: ['Jr.,'], say: ['Junior,'] },
    { words: ['No.'], say: ['number'], num: true },
    { words: ['Nos.'], say: ['numbers'], num: true },
    { words: ['no.'], say: ['number'], num: true },
    { words: ['Fig.'], say: ['figure'], num: true },
    { words: ['Figs.'], say: ['figures'], num: true },
    { words: ['fig.'], say: ['figure'], num: true },
    { words: ['p.'], say: ['page'], num: true },
    { words: ['pp.'], say: ['pages'], num: true },
    { words: ['Eq.'], say: ['equation'], num: true },
    { words: ['Eqs.'], say: ['equations'], num: true },
    { words: ['Sec.'], say: ['section'], num: true },
    { words: ['Sect.'], say: ['section'], num: true },
    { words: ['Ch.'], say: ['chapter'], num: true },
    { words: ['Vol.'], say: ['volume'], num: true },
    { words: ['vol.'], say: ['volume'], num: true },
    { words: ['ca.'], say: ['circa'], num: true },
  ],
  de: [
    { words: ['z.', 'B.'], say: ['zum', 'Beispiel'] },
    { words: ['z.B.'], say: ['zum Beispiel'] },
    { words: ['d.', 'h.'], say: ['das', 'heißt'] },
    { words: ['d.h.'], say: ['das heißt'] },
    { words: ['u.', 'a.'], say: ['unter', 'anderem'] },
    { words: ['usw.'], say: ['und so weiter'] },
    { words: ['bzw.'], say: ['beziehungsweise'] },
    { words: ['ca.'], say: ['circa'] },
    { words: ['vgl.'], say: ['vergleiche'] },
    { words: ['evtl.'], say: ['eventuell'] },
    { words: ['ggf.'], say: ['gegebenenfalls'] },
    { words: ['inkl.'], say: ['inklusive'] },
    { words: ['Nr.'], say: ['Nummer'], num: true },
    { words: ['S.'], say: ['Seite'], num: true },
    { words: ['Abb.'], say: ['Abbildung'], num: true },
    { words: ['Kap.'], say: ['Kapitel'], num: true },
    { words: ['Tab.'], say: ['Tabelle'], num: true },
  ],
  fr: [
    { words: ['p.', 'ex.'], say: ['par', 'exemple'] },
    { words: ['n°'], say: ['numéro'], num: true },
    { words: ['no'], say: ['numéro'], num: true },
    { words: ['p.'], say: ['page'], num: true },
    { words: ['chap.'], say: ['chapitre'], num: true },
    { words: ['fig.'], say: ['figure'], num: true },
    { words: ['env.'], say: ['environ'] },
    { words: ['cf.'], say: ['voir'] },
  ],
  es: [
    { words: ['p.', 'ej.'], say: ['por', 'ejemplo'] },
    { words: ['pág.'], say: ['página'], num: true },
    { words: ['págs.'], say: ['páginas'], num: true },
    { words: ['núm.'], say: ['número'], num: true },
    { words: ['n.º'], say: ['número'], num: true },
    { words: ['aprox.'], say: ['aproximadamente'] },
    { words: ['cap.'], say: ['capítulo'], num: true },
    { words: ['fig.'], say: ['figura'], num: true },
  ],
  it: [
    { words: ['pag.'], say: ['pagina'], num: true },
    { words: ['n.'], say: ['numero'], num: true },
    { words: ['cap.'], say: ['capitolo'], num: true },
    { words: ['fig.'], say: ['figura'], num: true },
    { words: ['ecc.'], say: ['eccetera'] },
    { words: ['es.'], say: ['esempio'] },
  ],
};

const EN_CURRENCY: Record<string, [string, string, string, string]> = {
  // symbol: one, many, minor one, minor many
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
  '¥': ['yen', 'yen', 'sen', 'sen'],
};
const CURRENCY = /^(US\$|[$€£¥])$/u;
const SCALE_EN = new Set(['thousand', 'million', 'billion', 'trillion']);

const LEAD = /^[("'“‘«[¿¡<]+/u;
const TRAIL = /[)"'”’»\],.;:!?>]+$/u;

function langOf(tag: string): Lang {
  const code = (tag.split(/[-_]/)[0] ?? 'en').toLowerCase();
  const region = (tag.split(/[-_]/)[1] ?? '').toUpperCase();
  let decimal = '.';
  try {
    decimal = new Intl.NumberFormat(tag).formatToParts(1.5).find((p) => p.type === 'decimal')?.value ?? '.';
  } catch {
    // an unknown tag: English conventions
  }
  return { code, monthFirst: code === 'en' && (region === 'US' || region === ''), decimal, tag };
}

/** Source text → what the voice reads, with how many spoken tokens each source token became. */
export function spokenForms(source: string, language: string): SpokenText {
  const lang = langOf(language);
  const tokens = tokenizeWords(source).map((t) => t.word);
  const out: string[] = tokens.map(() => '');
  for (let i = 0; i < tokens.length; ) {
    const said = rewrite(tokens, i, lang);
    if (said) {
      said.forEach((s, k) => (out[i + k] = s));
      i += said.length;
    } else {
      out[i] = tokens[i]!;
      i++;
    }
  }
  const counts = out.map((s, i) => {
    const n = tokenizeWords(s).length;
    if (n === 0) out[i] = tokens[i]!;
    return Math.max(1, n);
  });
  return { text: out.join(' '), counts };
}

/**
 * How a narrator reads a bare four-digit token when it is a year ("1894" → "18 94"), in the
 * languages whose eSpeak reading of it is a count (English, German); null elsewhere or when the
 * year reading is the number itself ("2005"). For the long-recording book recogniser, whose
 * dictionary has one entry per word and no context to tell a year from a count: it gets both.
 */
export function yearReading(token: string, language: string): string | null {
  const lang = langOf(language);
  if (!mayBeYear(token, lang)) return null;
  const said = sayYear(Number(token), lang);
  return said === token ? null : said;
}

/** Timings of the spoken tokens → one timing per source token: from its first spoken word's start to its last one's end. */
export function sourceTimings(source: string, spoken: SpokenText, timings: WordTiming[]): WordTiming[] {
  const tokens = tokenizeWords(source);
  const total = spoken.counts.reduce((a, b) => a + b, 0);
  if (tokens.length !== spoken.counts.length || timings.length !== total) {
    throw new Error(`spoken form mismatch: ${tokens.length} source words, ${spoken.counts.length} mapped, ${timings.length} timings for ${total} spoken words`);
  }
  let k = 0;
  return tokens.map((t, i) => {
    const first = timings[k]!;
    const last = timings[k + spoken.counts[i]! - 1]!;
    k += spoken.counts[i]!;
    return { word: t.word, start: first.start, end: Math.max(first.start, last.end) };
  });
}

/** A source token in its place: what each rule looks at. */
interface At {
  tokens: string[];
  i: number;
  lang: Lang;
  /** The token without its opening and closing punctuation (`lead`, `trail`). */
  core: string;
  lead: string;
  trail: string;
  next: string | undefined;
  /** The token before, lower case, without its opening punctuation ('' at the start). */
  prev: string;
}

/** A spoken form: the words for tokens[i] (and for the tokens after it that it covers), or null when it does not apply. */
type Rule = (at: At) => string[] | null;

/** Puts the token's own punctuation back around its spoken form. */
const wrap = (at: At, s: string) => `${at.lead}${s}${at.trail}`;

/** Abbreviations eSpeak spells or misreads (some span two tokens: "z. B."). */
function abbreviation({ tokens, i, lang }: At): string[] | null {
  for (const a of ABBREVIATIONS[lang.code] ?? []) {
    if (a.words.every((w, k) => tokens[i + k] === w) && (!a.num || /^[(]?\d/.test(tokens[i + a.words.length] ?? ''))) {
      // "usw." ending the text keeps its full stop (the sentence ends there).
      const ends = i + a.words.length === tokens.length && a.words.at(-1)!.endsWith('.');
      return ends ? [...a.say.slice(0, -1), `${a.say.at(-1)!}.`] : a.say;
    }
  }
  return null;
}

/** URLs: the scheme and a trailing slash are not read ("gnu dot org slash software"). */
function url(at: At): string[] | null {
  const m = /^(?:https?|ftp):\/\/(.+?)\/?$/i.exec(at.core) ?? /^(www\.[^\s]+?)\/?$/i.exec(at.core);
  if (!m || !m[1]) return null;
  return [wrap(at, m[1].replace(/\//g, ' / ').replace(/\s+/g, ' ').trim())];
}

/** Money with the symbol first: "$3.50", "€5", "US$20" (and "$1.5 million"). */
function moneySymbolFirst(at: At): string[] | null {
  const { core, lead, trail, next, lang } = at;
  const money = /^(US\$|[$€£¥])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?$/u.exec(core) ?? /^(US\$|[$€£¥])(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d{1,2}))?$/u.exec(core);
  if (!money) return null;
  // "$0", and "$1" among code ("ifconfig $1 up"), are shell parameters, not prices.
  if ((money[2] === '0' && !money[3]) || (/^\d$/.test(money[2]!) && !money[3] && codeLike(at.tokens))) return null;
  const symbol = money[1] === 'US$' ? '$' : money[1]!;
  const whole = money[2]!.replace(/[,.]/g, '');
  const cents = money[3] ? money[3].padEnd(2, '0') : null;
  if (lang.code === 'en' && next && SCALE_EN.has(next.toLowerCase().replace(TRAIL, ''))) {
    // "$1.5 million" → "1.5 million dollars"
    const amount = money[3] ? `${whole}.${money[3]}` : whole;
    return [`${lead}${amount}`, `${next.replace(TRAIL, '')} ${EN_CURRENCY[symbol]![1]}${TRAIL.exec(next)?.[0] ?? ''}${trail}`];
  }
  return [wrap(at, sayMoney(whole, cents, symbol, lang))];
}

/** Money with the symbol after: "3,50 €", "3.50 $". */
function moneySymbolAfter({ core, lead, trail, next, lang }: At): string[] | null {
  if (!next || !CURRENCY.test(next.replace(TRAIL, '')) || lead || trail) return null;
  const m = new RegExp(`^(\\d+)\\${lang.decimal}(\\d{2})$`).exec(core) ?? /^(\d+)()$/.exec(core);
  if (!m) return null;
  const symbol = next.replace(TRAIL, '') === 'US$' ? '$' : next.replace(TRAIL, '');
  const said = sayMoney(m[1]!, m[2] || null, symbol, lang);
  const nextTrail = TRAIL.exec(next)?.[0] ?? '';
  const parts = said.split(' ');
  return [parts[0]!, `${parts.slice(1).join(' ')}${nextTrail}`];
}

/** Dates: ISO "2024-03-15", numeric "15/03/2024", "15.03.2024", "3/15/2024". */
function date(at: At): string[] | null {
  const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(at.core);
  const dmy = /^(\d{1,2})([./])(\d{1,2})\2(\d{4})$/.exec(at.core);
  let y: number;
  let m: number;
  let d: number;
  if (iso) [y, m, d] = [Number(iso[1]), Number(iso[2]), Number(iso[3])];
  else if (dmy) {
    const a = Number(dmy[1]);
    const b = Number(dmy[3]);
    y = Number(dmy[4]);
    const monthFirst = dmy[2] === '/' && (b > 12 || (at.lang.monthFirst && a <= 12));
    [m, d] = monthFirst ? [a, b] : [b, a];
  } else return null;
  const said = sayDate(y, m, d, at.lang);
  return said ? [wrap(at, said)] : null;
}

/** Times: "14:00" (eSpeak: "fourteen zero zero"), English "3:05" ("three oh five"). */
function time(at: At): string[] | null {
  const { core, next, lang } = at;
  const t = /^([01]?\d|2[0-3]):([0-5]\d)$/.exec(core);
  if (!t) return null;
  const h = Number(t[1]);
  const min = Number(t[2]);
  if (lang.code === 'en') {
    const ampm = !!next && /^(a\.?m\.?|p\.?m\.?)$/i.test(next.replace(/[,;:!?)]+$/, ''));
    if (min === 0) return [wrap(at, ampm ? `${h}` : h > 12 || h === 0 ? `${String(h).padStart(2, '0')} hundred` : `${h} o'clock`)];
    if (min < 10) return [wrap(at, `${h} oh ${min}`)];
    return null;
  }
  if (min !== 0) return null;
  const hourWord = HOUR_WORD[lang.code] ?? '';
  return [wrap(at, next && /^(uhr|h|heures?|horas?|uur|ore)$/i.test(next.replace(/[,;:!?.)]+$/, '')) ? `${h}` : `${h} ${hourWord}`.trim())];
}

/**
 * Roman numerals as numbers: after a section word ("Chapter IV"), after a name ("Henry
 * VIII", "World War II"), or opening a heading ("IV. The Fight").
 */
function romanNumeral(at: At): string[] | null {
  const { tokens, i, core, trail, next, prev, lang } = at;
  const roman = /^[IVXL]+$/.test(core) ? romanValue(core) : null;
  if (roman === null) return null;
  const words = new Set([...(SECTION_WORDS[lang.code] ?? []), ...SECTION_WORDS.en!]);
  // "Part I", "Chapter IV." but not "my own part, I was" or "the first book I have".
  const afterSection = words.has(prev) && (trail !== '' || !next || !/^\p{Ll}/u.test(next));
  const afterName = i > 0 && /^\p{Lu}\p{Ll}+$/u.test(tokens[i - 1]!) && core.length >= 2;
  const opening = i === 0 && (/^[.:]$/.test(trail) || (trail === '' && core.length >= 2)) && !!next && /^\p{Lu}/u.test(next);
  return afterSection || afterName || opening ? [wrap(at, String(roman))] : null;
}

/** A four-digit token a year could be, in a language whose eSpeak reads it as a count (English, German). */
function mayBeYear(core: string, lang: Lang): boolean {
  return (lang.code === 'en' || lang.code === 'de') && /^(1[1-9]\d\d|20[1-9]\d)$/.test(core);
}

/** Years, where eSpeak reads them as counts (English, German), when the words around say it is a year. */
function year(at: At): string[] | null {
  const { tokens, i, core, lead, trail, next, prev, lang } = at;
  if (!mayBeYear(core, lang)) return null;
  const before = prev.replace(/[,;:]$/, '');
  const afterDay = /^\d{1,2}(st|nd|rd|th|\.)?,?$/.test(before) && i > 1 && MONTHS(lang).has(tokens[i - 2]!.toLowerCase().replace(/[.,]$/, ''));
  const context =
    afterDay ||
    YEAR_BEFORE[lang.code]!.has(before) || MONTHS(lang).has(before) || (!!next && YEAR_AFTER.has(next.toLowerCase().replace(/[,;:)]$/, ''))) || (lead.startsWith('(') && trail.startsWith(')'));
  return context ? [wrap(at, sayYear(Number(core), lang))] : null;
}

/** Year ranges in English and German: "1914–18" → "19 14 to 19 18". */
function yearRange(at: At): string[] | null {
  const { lang } = at;
  const range = /^(1[1-9]\d\d|20\d\d)[–-](1[1-9]\d\d|20\d\d|\d\d)$/.exec(at.core);
  if (!range || (lang.code !== 'en' && lang.code !== 'de')) return null;
  const to = lang.code === 'en' ? 'to' : 'bis';
  const end = range[2]!.length === 2 ? Number(range[1]!.slice(0, 2) + range[2]) : Number(range[2]);
  return [wrap(at, `${sayYear(Number(range[1]), lang)} ${to} ${sayYear(end, lang)}`)];
}

/** English: a day after a month name is an ordinal ("March 5" → "March 5th"). */
function dayAfterMonth(at: At): string[] | null {
  const { core, prev, lang } = at;
  if (lang.code !== 'en' || !/^\d{1,2}$/.test(core) || Number(core) < 1 || Number(core) > 31 || !MONTHS(lang).has(prev.replace(/\.$/, ''))) return null;
  return [wrap(at, ordinalEn(Number(core)))];
}

/** The rules in the order they are tried; the first that applies gives the token's spoken form. */
const RULES: Rule[] = [abbreviation, url, moneySymbolFirst, moneySymbolAfter, date, time, romanNumeral, year, yearRange, dayAfterMonth];

/** The spoken form of tokens[i] (and of the tokens after it that it covers), or null to leave it. */
function rewrite(tokens: string[], i: number, lang: Lang): string[] | null {
  const at = tokenAt(tokens, i, lang);
  for (const rule of RULES) {
    const said = rule(at);
    if (said) return said;
  }
  return null;
}

function tokenAt(tokens: string[], i: number, lang: Lang): At {
  const tok = tokens[i]!;
  const lead = LEAD.exec(tok)?.[0] ?? '';
  const trail = TRAIL.exec(tok.slice(lead.length))?.[0] ?? '';
  const core = tok.slice(lead.length, tok.length - trail.length);
  const prev = i > 0 ? tokens[i - 1]!.toLowerCase().replace(LEAD, '') : '';
  return { tokens, i, lang, core, lead, trail, next: tokens[i + 1], prev };
}

const codeMemo = new WeakMap<string[], boolean>();
/** Whether the text reads like a command line or code: paths, options, assignments, braces. */
function codeLike(tokens: string[]): boolean {
  let v = codeMemo.get(tokens);
  if (v === undefined) {
    v = tokens.some((t) => /^(#!|--?\w)|[{}=]|^\/\w+\/|^\w+\/\w/.test(t) && !/^<?(https?|ftp):\/\//.test(t));
    codeMemo.set(tokens, v);
  }
  return v;
}

function sayMoney(whole: string, cents: string | null, symbol: string, lang: Lang): string {
  const c = cents ? Number(cents) : 0;
  if (lang.code === 'en') {
    const [one, many, minorOne, minorMany] = EN_CURRENCY[symbol] ?? ['', '', '', ''];
    const w = Number(whole);
    if (w === 0 && c > 0) return `${c} ${c === 1 ? minorOne : minorMany}`;
    const main = `${whole} ${w === 1 ? one : many}`;
    if (!c) return main;
    return c < 10 ? `${main} and ${c} ${c === 1 ? minorOne : minorMany}` : `${main} ${c}`;
  }
  // eSpeak names the currency in each language when it follows the number ("3 € 50" → "drei Euro fünfzig").
  return c ? `${whole} ${symbol} ${c}` : `${whole} ${symbol}`;
}

const monthNames = new Map<string, Set<string>>();
function MONTHS(lang: Lang): Set<string> {
  let set = monthNames.get(lang.tag);
  if (!set) {
    set = new Set<string>();
    try {
      for (const style of ['long', 'short'] as const) {
        const fmt = new Intl.DateTimeFormat(lang.tag, { month: style, timeZone: 'UTC' });
        for (let m = 0; m < 12; m++) set.add(fmt.format(new Date(Date.UTC(2000, m, 1))).toLowerCase().replace(/\.$/, ''));
      }
    } catch {
      // no month names for this tag
    }
    monthNames.set(lang.tag, set);
  }
  return set;
}

/** A date as a person reads it: the language's own long format (month names from the platform's CLDR data). */
function sayDate(y: number, m: number, d: number, lang: Lang): string | null {
  if (m < 1 || m > 12 || d < 1 || d > 31) return null;
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCDate() !== d) return null;
  if (lang.code === 'en') {
    const month = new Intl.DateTimeFormat('en-US', { month: 'long', timeZone: 'UTC' }).format(date);
    return `${month} ${ordinalEn(d)}, ${sayYear(y, lang)}`;
  }
  try {
    const text = new Intl.DateTimeFormat(lang.tag, { dateStyle: 'long', timeZone: 'UTC' }).format(date);
    return lang.code === 'de' ? text.replace(/\b(1[1-9]\d\d)\b/, (_, yy: string) => sayYear(Number(yy), lang)) : text;
  } catch {
    return null;
  }
}

function sayYear(y: number, lang: Lang): string {
  const hi = Math.floor(y / 100);
  const lo = y % 100;
  if (lang.code === 'de') {
    if (y >= 2000 || y < 1100) return String(y);
    return lo ? `${hi} hundert ${lo}` : `${hi} hundert`;
  }
  if (y >= 2000 && y < 2010) return String(y);
  if (lo === 0) return y % 1000 === 0 ? String(y) : `${hi} hundred`;
  return lo < 10 ? `${hi} oh ${lo}` : `${hi} ${lo}`;
}

function ordinalEn(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${s}`;
}

function romanValue(s: string): number | null {
  const v: Record<string, number> = { I: 1, V: 5, X: 10, L: 50 };
  let total = 0;
  for (let i = 0; i < s.length; i++) {
    const a = v[s[i]!]!;
    const b = v[s[i + 1]!] ?? 0;
    total += a < b ? -a : a;
  }
  // Only the canonical spelling is a numeral ("IIII", "VX" are not).
  return total > 0 && toRoman(total) === s ? total : null;
}

function toRoman(n: number): string {
  const table: Array<[number, string]> = [
    [50, 'L'],
    [40, 'XL'],
    [10, 'X'],
    [9, 'IX'],
    [5, 'V'],
    [4, 'IV'],
    [1, 'I'],
  ];
  let out = '';
  for (const [v, r] of table) while (n >= v) (out += r), (n -= v);
  return out;
}
