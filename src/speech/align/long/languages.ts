// Which languages a long recording can be aligned in: locating the book's text in the audio
// needs a recogniser for the language (recognize.ts: Debian's PocketSphinx en-us model for
// English, soundswallower's fr-fr model for French). No imports: the API checks a read-along
// job's language at creation with it.

/** For messages: the languages read-along from a recording supports. */
export const RECORDING_LANGUAGES = 'English and French (en, fr and their regional tags: en-US, en-GB, fr-FR, fr-CA, …)';

export const recordingLanguageSupported = (language: string): boolean => /^(en|fr)(-|_|$)/i.test(language.trim());
