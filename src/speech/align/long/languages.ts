// Which languages a long recording can be aligned in: locating the book's text in the audio
// needs a recogniser for the language (Debian's PocketSphinx en-us model), so English only for
// now. No imports: the API checks a read-along job's language at creation with it.

/** For messages: the languages read-along from a recording supports. */
export const RECORDING_LANGUAGES = 'English only (en, en-US, en-GB, … any en-* tag)';

export const recordingLanguageSupported = (language: string): boolean => /^en(-|_|$)/i.test(language);
