// The form's language: the one the document declares (the upload's `language`, read by the
// service from EPUB dc:language or PDF /Lang) until the user picks one, else en-US, which is
// also what the service uses for a job that names none.
import { useEffect, useState } from 'react';
import type { Language, Upload } from '../../types.ts';

export const DEFAULT_LANGUAGE = 'en-US';

/**
 * What the selector shows for a document that declares `declared`: the listed code it names
 * (case aside); the default when it names only the default's primary language ("en" for
 * en-US: the voices marked for en-US are a reading of "en"); else the tag as declared (the
 * selector lists it, and the service narrates it with its primary language's voices).
 */
export function languageForDocument(declared: string, languages: Language[]): string {
  const d = declared.toLowerCase();
  const listed = languages.find((l) => l.code.toLowerCase() === d);
  if (listed) return listed.code;
  if (!d.includes('-') && DEFAULT_LANGUAGE.toLowerCase().split('-')[0] === d) return DEFAULT_LANGUAGE;
  return declared;
}

/** The selected language, following the document's until the user chooses one. */
export function useDocumentLanguage(doc: Upload | null, languages: Language[]) {
  const [language, setLanguage] = useState(DEFAULT_LANGUAGE);
  const [picked, setPicked] = useState(false);
  const declared = doc?.language ?? null;
  useEffect(() => {
    if (!picked) setLanguage(declared ? languageForDocument(declared, languages) : DEFAULT_LANGUAGE);
  }, [declared, languages, picked]);
  return {
    language,
    /** What the document declares, while the selection is still its (for the hint). */
    declared: picked ? null : declared,
    pick(code: string) {
      setPicked(true);
      setLanguage(code);
    },
  };
}
