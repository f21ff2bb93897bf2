// Which languages a long recording can be aligned in: every language eSpeak NG speaks. Locating
// the book's text in the audio needs a recogniser: English and French have acoustic models of
// their own (recognize.ts); any other language is heard with a borrowed one and eSpeak's
// pronunciations of the book's words (borrowed.ts). The API checks a read-along job's language
// at creation with this.
import { espeakSpeaks } from '../../tts/espeak.ts';

/** For messages: the languages read-along from a recording supports. */
export const RECORDING_LANGUAGES = 'every language eSpeak NG speaks (English and French with acoustic models of their own, the others with a borrowed one)';

export const recordingLanguageSupported = (language: string): Promise<boolean> => espeakSpeaks(language);
