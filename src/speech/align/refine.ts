// Boundary refinement after a forced alignment. The HMM's boundaries between words in
// running speech are good (phone models trained on the transition); its edges next to a
// pause are not: silence and a word's quiet onset or release look alike to a 10 ms
// frame model, so a word often takes part of the pause (or the pause a weak onset).
// Those edges move to where the signal starts or stops sounding. Edges inside running
// speech get a constant shift (the frame-time convention, below), then move to the largest
// spectral change within 10 ms: the HMM's 10 ms frames and its phone models place a
// boundary near the transition, the spectrum says where in those frames it is.

export interface Segment {
  kind: 'word' | 'pause';
  /** Seconds. */
  start: number;
  end: number;
  /** A word's phones in the model's phone set (the pronunciation the search chose), when known. */
  phones?: string[];
}

export interface RefineParams {
  /**
   * Added to every HMM boundary inside running speech (seconds). A frame f is scored on
   * the window [f·10, f·10 + 25.6) ms, so a change the model reacts to at frame f lies
   * after f·10 ms; how far after depends on the labeller as much as on the signal (round 37).
   */
  hmmShiftS: number;
  /** Energy (ln power) this far above the utterance's noise floor (its 5th percentile) is sound. */
  soundOverFloor: number;
  /** A weak onset or release tail: still this far above the floor; followed for at most slopeFrames. */
  tailOverFloor: number;
  slopeFrames: number;
  /** Frames of sound in a row that make an onset (a click is not one). */
  soundRun: number;
  /** How far (frames) a pause edge may move out into the pause the HMM gave it. */
  outReach: number;
  /** Fewest frames a word keeps when its edges move in. */
  minWord: number;
  /** Where, inside energy frame f ([f·hop, f·hop + 25 ms)), a detected onset / offset lies (seconds). */
  onsetShiftS: number;
  offsetShiftS: number;
  /** Refine starts after a pause / ends before a pause at all. */
  starts: boolean;
  ends: boolean;
  /**
   * A quiet stretch at least this long (frames) across the HMM's boundary of two words it
   * joined without a pause is a pause all the same (longer than a stop's closure); 0: off.
   */
  gapFrames: number;
  /**
   * The shift of a boundary between two words the HMM joined with no pause, in place of
   * hmmShiftS (the bench's `ideas`: offsets by the phones on either side); unset: hmmShiftS.
   */
  runningShiftS?: (left: Segment, right: Segment) => number;
  /**
   * A boundary between two words the HMM joined moves to the largest spectral change within
   * this far of it (after the shift), then by snapOffsetS; 0: off. Needs the `change` argument.
   */
  snapReachS: number;
  snapOffsetS: number;
  /**
   * A boundary between two joined words where the second begins with a stop or an affricate
   * (English models' phones) moves to the onset of its closure, which phonetic labelling counts
   * as part of the stop (TIMIT's "bcl b", emuR's ae): to the steepest fall of the level
   * (SpectralChange.level, 10 ms either side) from this far before the shifted boundary to
   * snapReachS after it, where that fall is closureFall (ln power) or more; else it snaps as
   * any other. 0: off (the bench's `ideas`: round 44 tried 30 ms at 4 dB; ae and the noisy room
   * gained 0.5-1 ms, hand tuning and held-out lost 0.2-0.3, phonlab's untouched clips 1.3 and
   * Piper 1.2: not adopted). Needs the word segments' phones (HmmAlignerOptions.phones).
   */
  closureReachS: number;
  closureFall: number;
  /** A Gaussian prior of this width around the boundary weighs the change (bench only; unset: flat). */
  snapSigmaS?: number;
  /**
   * The signal's dynamic range (ln power: its 95th-percentile frame over the noise floor) below
   * which pause edges are left where the HMM put them (shifted) and no quiet run is taken for a
   * pause: in a noisy room, speech lies so little above the floor that soundOverFloor is high on
   * each word's rise and decay, and edges moved by it cut words short. 0: always refine.
   */
  minDynamicRange: number;
  /**
   * A word's start after a pause moves in the energy only when the word's loudest frame lies
   * this far (ln power) over the pause before it (the median of the HMM's pause frames; the
   * floor at the clip's start); else it stays where the HMM put it. A word that rises little
   * over the room's tone has its onset under the noise, and the threshold finds it late. 0: off.
   */
  minStartContrast: number;
  /**
   * The same for a word's end before a pause (its peak over the pause after it). Higher than
   * minStartContrast: a word decays more slowly than it sets in (a vowel's release, a final
   * nasal or fricative), so more of its end lies under a given noise and the threshold cuts it.
   */
  minEndContrast: number;
  /**
   * Where the decodes (two acoustic models, hmm.ts) put a word edge further apart than this
   * (seconds), the first decode's edge is taken instead of their mean; 0: always the mean. A mean
   * halves a gross error instead of removing it, and gross disagreements are where one model lost
   * its path. The first is the 16 kHz model, the one that keeps it: in the noisy room, and more so
   * through a low-bit-rate codec (32 kb/s Opus, MP3 or AAC), the 8 kHz model's plain edges lie
   * 53-65 ms from the hand labels where the 16 kHz model's lie 24-38 ms (round 39, bench/align-codecs).
   */
  maxSpreadS: number;
  /** Frame energy (ln power) at or below which a frame is digital silence, left out of the noise floor (DIGITAL_SILENCE). */
  digitalSilence: number;
  /**
   * The energy is read from the audio high-passed at this frequency (withoutDc; 0: as it is). A DC
   * offset adds to every frame and, like rumble under the audible band, sets the noise floor in
   * place of the room: emuR's ae clips carry one at -55 dBFS over a room at -64, two LibriVox
   * clips one at -42 dBFS over a room at -55 (round 40).
   */
  dcCutoffHz: number;
  /**
   * A run of digital silence at least this long (seconds) is a join of two recordings (an edit),
   * and each piece between joins gets a noise floor of its own (0: one floor for the clip). A
   * long recording's segment can join readers of different rooms (tracks, a quoted recording):
   * measured from the quietest room, a louder room's tone counted as sound and the words beside
   * it took its pauses (round 40: the cut-tracks books, jfk's crowd beside LibriVox readers, 45
   * and 50 words off in round 39, 61 and 60 once the DC blocker lowered the readers' floors, 25
   * and 26 with this). 0.2 s: no room is that long in digital silence, and a gated recording's
   * pauses, each a piece's edge, moved the gated hand clips by 1.2 ms at most (starts of held-out).
   */
  joinSeconds: number;
}

/** How fast the spectrum changes: one value per frame, frame f centred at f·hopS + centreS. */
export interface SpectralChange {
  values: Float32Array;
  hopS: number;
  centreS: number;
  /** Each frame's level (spectralChangeOf's `withLevel`): the mean log-mel energy of its bands above the voicing bar (above about 280 Hz). */
  level?: Float32Array;
}

/**
 * Spectral change from log-mel frames (frames of frameS every hopS): the RMS difference of the
 * frames either side of each frame, smoothed [1 2 1]/4. Peaks where one sound gives way to
 * another, which is where hand labellers put a boundary between two words in running speech.
 */
function spectralChange(mel: { frames: number; dims: number; data: Float32Array }, hopS: number, frameS: number, withLevel: boolean): SpectralChange {
  const raw = new Float32Array(mel.frames);
  for (let f = 1; f + 1 < mel.frames; f++) {
    let d = 0;
    for (let b = 0; b < mel.dims; b++) {
      const x = mel.data[(f + 1) * mel.dims + b]! - mel.data[(f - 1) * mel.dims + b]!;
      d += x * x;
    }
    raw[f] = Math.sqrt(d / mel.dims);
  }
  const values = new Float32Array(mel.frames);
  for (let f = 1; f + 1 < mel.frames; f++) values[f] = 0.25 * raw[f - 1]! + 0.5 * raw[f]! + 0.25 * raw[f + 1]!;
  if (!withLevel) return { values, hopS, centreS: frameS / 2 };
  const level = new Float32Array(mel.frames);
  for (let f = 0; f < mel.frames; f++) {
    let sum = 0;
    for (let b = LEVEL_FROM_BAND; b < mel.dims; b++) sum += mel.data[f * mel.dims + b]!;
    level[f] = sum / Math.max(1, mel.dims - LEVEL_FROM_BAND);
  }
  return { values, hopS, centreS: frameS / 2, level };
}

/** Log-mel framing for spectralChange: 20 ms frames every 5 ms (the HMM's frames are 10 ms). */
const CHANGE_FRAMING = { frameMs: 20, hopMs: 5, nMels: 40 };
/** The first of the 40 mel bands that SpectralChange.level counts (bands 0-3 lie under about 280 Hz: a voiced closure's bar). */
const LEVEL_FROM_BAND = 4;

type MelSpectrogram = (samples: Float32Array, sampleRate: number, opts: typeof CHANGE_FRAMING) => { frames: number; dims: number; data: Float32Array };

/**
 * The spectral change of a signal, framed as the refinement expects (`mel`: the native addon's or
 * the reference's melSpectrogram); `withLevel`: with each frame's level too (RefineParams.closureReachS).
 */
export function spectralChangeOf(samples: Float32Array, sampleRate: number, mel: MelSpectrogram, withLevel = false): SpectralChange {
  return spectralChange(mel(samples, sampleRate, CHANGE_FRAMING), CHANGE_FRAMING.hopMs / 1000, CHANGE_FRAMING.frameMs / 1000, withLevel);
}

/**
 * Frame energy (ln of the sum of squares over a 25 ms frame at 16 kHz, as the aligners compute
 * it) at or below which a frame is digital silence: -90 dBFS, a mean square of one 16-bit step.
 * Edited recordings have it where silence was inserted (between chapters, at a file's end) or
 * gated: exact zeros, dithered silence about -96 dBFS, a lossy codec's decoded silence -100 dBFS
 * and under (Opus 24 kb/s). A room's tone lies over it unless the recording peaks 35 dB or more
 * under full scale.
 * The line lay at -80 dBFS until round 40, and a quiet recording lost its floor: the hand clips'
 * rooms lie 48-56 dB under their peaks, so at a -30 dBFS peak their pauses counted as digital
 * silence and word edges moved by up to 100 ms (README, Alignment, round 40).
 */
export const DIGITAL_SILENCE = Math.log(400 * 1e-9);
/**
 * The line until round 40 (-80 dBFS). The long recording's voice detector (long/recognize.ts)
 * and dtw keep it (noiseFloor's default) where it does not mask the speech (detectorEnergy):
 * with -90 there everywhere, the recogniser heard a quiet music intro as speech and one
 * messy-book draw (74 of the first 144) timed 25 unread words of the book over it.
 */
export const DIGITAL_SILENCE_LOCATE = Math.log(400 * 1e-8);

/**
 * Chosen on the tuning parts (hand labels + Piper-exact, bench/align-accuracy.bench.ts):
 * a 15 ms shift (the frame's window centre lies 7.8-12.8 ms after f·10 ms, and the HMM's
 * boundaries between words in running speech come a few ms early besides). Round 3
 * (bench/align-ideas.ts) chose it by the sum of both tuning sets' running-speech MAE, flat
 * over 15-20 ms, taking the value best on the real tuning set; shifts by the phone class on
 * either side lost there. Pause edges at
 * the first/last frame 10 dB over the floor with no walk down the slope (following the
 * slope over-extended sentence-final decays and breaths). A quiet run of 150 ms or more
 * across a boundary the HMM gave to a word is treated as a pause: 100 ms from round 2 (seen on
 * goforward's "forward ten" and jfk's "ask what") to round 8, when the noise floor left digital
 * silence out and round 3's criterion (tuning running-speech edges, real + Piper) went to
 * 42.2 ms for 15, 20 frames or no rule against 42.6 for 10, with 15 best on the tuning pause
 * edges among those (a 100 ms run is also a voiceless closure: praatio's "ripped the").
 * Round 4 (bench/align-ideas.ts snap): boundaries of two joined words
 * snap to the largest spectral change within 10 ms, plus 5 ms, chosen by round 3's criterion
 * over reach 5-20 ms, offset -5-10 ms, a Gaussian prior or none, shift 5-15 ms; real running
 * edges 28.2 → 23.2 ms (tuning), 19.3 → 15.6 ms (held-out).
 * Round 36: minDynamicRange from the clean clips' own ranges (the lowest 27.1 dB) and the clean
 * sets with a noisy room's tone added (bench/align-noise.ts); the edge contrast 20 dB on the
 * tuning halves with that tone, the most that moved no scored clean edge. Round 37: ends apart
 * at 26 dB, by the sum of both tuning sets' end MAE over the tone levels (none, 20-5 dB): 28 dB
 * least (274.6 ms), 26 dB within 1 % of it (276.4) and the lower one taken, since every dB more
 * hands more clean ends to the HMM (30 dB: one more hand tuning end, 23.4 → 28.6 ms).
 * Round 37: the running-speech shift 15 → 10 ms and the snap's offset 5 → 0 ms. A fourth real
 * set labelled by others (emuR's ae sentences, bench --emu-ae) put the HMM's own running
 * boundaries 1 ms from its labels where the other labellers put them 9-24 ms after them: where
 * a boundary lies in running speech depends on who labels it. So the two were chosen over the
 * four independently labelled real sets (hand tuning, hand held-out, the noisy room, ae) by the
 * least worst regret (a set's MAE over the best any setting gets on it), the synthetic set left
 * out (its boundary between two joined words is a convention): worst regret 3.4 ms against 9.7
 * for round 36's setting (on ae); grid shift 0-17.5 ms × offset none/0/2.5/5 ms × reach 10-20 ms,
 * where a 15 ms reach with a 7.5 ms shift came 0.2 ms lower (3.25) and costs the synthetic set
 * 1.3 ms more: the reach was kept.
 * Round 39: maxSpreadS 100 ms, over 50-150 ms on the hand sets as WAV and through the lossy
 * codecs of bench/align-codecs.bench.ts and with room tone (bench/align-noise.ts): as WAV, no clean
 * set moves at 80 ms or more (ae, Piper, hand; through 32 kb/s MP3 and AAC, hand held-out's starts
 * lose 1.7 and 1.9 ms), the noisy room gains at every value (WAV 28.7/24.2 →
 * 26.8/22.3 ms, 32 kb/s Opus 45.8/38.5 → 28.7/22.6); 80 ms gained 0.6/1.2 ms more on the noisy
 * room, the one clip it mostly moves, and 100 ms was taken as less fitted to it.
 */
export const DEFAULT_REFINE: RefineParams = {
  hmmShiftS: 0.01,
  soundOverFloor: Math.log(10),
  tailOverFloor: Math.log(10) * 0.5,
  slopeFrames: 0,
  soundRun: 3,
  outReach: 4,
  minWord: 3,
  onsetShiftS: 0.01,
  offsetShiftS: 0,
  starts: true,
  ends: true,
  gapFrames: 15,
  snapReachS: 0.01,
  snapOffsetS: 0,
  closureReachS: 0,
  closureFall: Math.log(10) * 0.4,
  minDynamicRange: Math.log(10) * 2.4,
  minStartContrast: Math.log(10) * 2,
  minEndContrast: Math.log(10) * 2.6,
  maxSpreadS: 0.1,
  digitalSilence: DIGITAL_SILENCE,
  dcCutoffHz: 20,
  joinSeconds: 0.2,
};

function percentile(values: Float32Array, p: number): number {
  return ofSorted(Float32Array.from(values).sort(), p);
}

/** The `p`-th percentile of values already sorted. */
function ofSorted(s: Float32Array, p: number): number {
  return s[Math.min(s.length - 1, Math.max(0, Math.floor(p * (s.length - 1))))] ?? 0;
}

/** Fewest frames above digital silence for a floor of their own (0.3 s). */
const MIN_LIVE = 30;

/**
 * The utterance's noise floor: the `p`-th percentile (default the 5th) energy of its frames
 * that are not digital silence. Digital silence is below any threshold anyway; counted in, 5 %
 * of it (0.3 s of inserted silence around a 3 s clip) puts the floor there, and the room tone of
 * every pause counts as sound (jfk's crowd, 30 dB under his voice): the words on either side
 * take the pause.
 * A gated recording, whose pauses are all digital, gets the floor of its quietest speech frames,
 * as a clip with hardly any pause always has (parselmouth's north-wind clip: 5.0 ms that way).
 */
export function noiseFloor(energy: Float32Array, p = 0.05, digitalSilence = DIGITAL_SILENCE_LOCATE): number {
  return ofSorted(sortedLiveFrames(energy, digitalSilence), p);
}

/** A detector reading whose loud frames (95th percentile) lie less than this over its floor hears little of any speech in it (ln power: 20 dB). */
const MASKED_RANGE = Math.log(10) * 2;
/** ...and the offset or the level is what masks it when reading the energy as the refinement does spreads them this much wider (6 dB). */
const UNMASKED_GAIN = Math.log(10) * 0.6;

/** An energy reading for a detector of sound (the long recording's voice detector, dtw's speech span and pauses) and its noise floor. */
export interface DetectorEnergy {
  energy: Float32Array;
  /** noiseFloor of `energy` at the percentile asked for. */
  floor: number;
  /** Whether `energy` was read without the DC offset and with -90 dBFS as digital silence. */
  unmasked: boolean;
  /** The digital-silence line `floor` was read with (for noiseFloor at other percentiles). */
  digitalSilence: number;
}

/**
 * The energy a detector of sound reads: the recording's as it is (its DC offset in, digital
 * silence under -80 dBFS: DIGITAL_SILENCE_LOCATE, what the long-recording rules were measured
 * with), unless that leaves its loud frames under 20 dB over the floor while the energy read as
 * the refinement reads it (withoutDc, DIGITAL_SILENCE scaled to the frame) spreads them 6 dB or
 * more wider: then the latter. In speech read as it is the loud frames lie 29-49 dB over the
 * floor (the noisy room 19 dB, music 11-47 dB; reading without the offset widens those by 0-4
 * dB), but an offset near the speech's level, or a room under -80 dBFS in a quiet recording,
 * becomes the floor and the detector's threshold (10 dB over it) lies over nearly all the speech:
 * jfk 24 dB down with a 1 % offset, or a LibriVox clip 45 dB down, was heard as no speech at all.
 * Not always the reading without the offset (round 40 tried it): the LibriVox clips' offsets
 * (-42 dBFS over rooms at -55) had kept breaths and quiet noise under the voice detector's
 * threshold, and without them the first 144 messy draws went 19.0 -> 26.5 ms with 26 unread
 * words timed. `frameSamples` is the frames' length in samples (DIGITAL_SILENCE is for 400);
 * `asRecorded`: that reading whatever it masks (a bench's baseline).
 */
export function detectorEnergy(samples: Float32Array, sampleRate: number, frameSamples: number, energyOf: (samples: Float32Array) => Float32Array, p = 0.05, asRecorded = false): DetectorEnergy {
  const energy = energyOf(samples);
  const asIs = sortedLiveFrames(energy, DIGITAL_SILENCE_LOCATE);
  const asIsReading = { energy, floor: ofSorted(asIs, p), unmasked: false, digitalSilence: DIGITAL_SILENCE_LOCATE };
  if (asRecorded || rangeOf(asIs) >= MASKED_RANGE) return asIsReading;
  const clean = energyOf(withoutDc(samples, sampleRate));
  const line = DIGITAL_SILENCE + Math.log(frameSamples / 400);
  const live = sortedLiveFrames(clean, line);
  if (rangeOf(live) < rangeOf(asIs) + UNMASKED_GAIN) return asIsReading;
  return { energy: clean, floor: ofSorted(live, p), unmasked: true, digitalSilence: line };
}

/** The frames that are not digital silence (all of them when too few are), sorted: a copy. */
function sortedLiveFrames(energy: Float32Array, digitalSilence: number): Float32Array {
  const live = energy.filter((e) => e > digitalSilence);
  return (live.length >= MIN_LIVE ? live : Float32Array.from(energy)).sort();
}

/** How far (ln power) the loud frames, the 95th percentile, lie above the 5th, of frames already sorted. */
const rangeOf = (sorted: Float32Array) => ofSorted(sorted, 0.95) - ofSorted(sorted, 0.05);

/** The noise floor (noiseFloor's default) and how far (ln power) the loud frames, the 95th percentile, lie above it. */
function levels(energy: Float32Array, digitalSilence = DIGITAL_SILENCE): { floor: number; range: number } {
  const live = sortedLiveFrames(energy, digitalSilence);
  return { floor: ofSorted(live, 0.05), range: rangeOf(live) };
}

/**
 * The noise floor at each frame: each piece of the clip between joins (runs of digital silence
 * of joinFrames or more) gets its own, the clip's where a piece has too few live frames (and in
 * the joins themselves, which lie under any threshold anyway).
 */
function floorsByPiece(energy: Float32Array, digitalSilence: number, clipFloor: number, joinFrames: number): Float32Array {
  const n = energy.length;
  const out = new Float32Array(n).fill(clipFloor);
  if (joinFrames <= 0) return out;
  const piece = (a: number, b: number) => {
    if (a === 0 && b === n) return; // no join: the clip's floor
    const live = energy.subarray(a, b).filter((x) => x > digitalSilence);
    if (live.length >= MIN_LIVE) out.fill(ofSorted(live.sort(), 0.05), a, b);
  };
  let from = 0;
  for (let f = 0; f < n; ) {
    if (energy[f]! > digitalSilence) {
      f++;
      continue;
    }
    let g = f;
    while (g < n && energy[g]! <= digitalSilence) g++;
    if (g - f >= joinFrames) {
      piece(from, f);
      from = g;
    }
    f = g;
  }
  piece(from, n);
  return out;
}

/** How far (ln power) the loud frames lie above the noise floor: the 95th percentile over the 5th, digital silence left out. */
export function dynamicRange(energy: Float32Array): number {
  return levels(energy).range;
}

/**
 * [start, end] in seconds for each word, in order. `decodes` are alignments of the same
 * words (two acoustic models' decodes, or one model's from slightly different starts): their
 * word edges are averaged, or the first's taken where they lie over maxSpreadS apart; which
 * edges border a pause is read from the first.
 */
export function refineBoundaries(decodes: { segments: Segment[] }[], energy: Float32Array, hopS: number, params: Partial<RefineParams> = {}, change?: SpectralChange): [number, number][] {
  const p = { ...DEFAULT_REFINE, ...params };
  const { floor, range } = levels(energy, p.digitalSilence);
  if (p.minDynamicRange > 0 && range < p.minDynamicRange) Object.assign(p, { starts: false, ends: false, gapFrames: 0 });
  const n = energy.length;
  const floors = floorsByPiece(energy, p.digitalSilence, floor, Math.round(p.joinSeconds / hopS));
  const at = (f: number) => Math.max(0, Math.min(n - 1, f));
  const soundThr = (f: number) => floors[at(f)]! + p.soundOverFloor;
  const tailThr = (f: number) => floors[at(f)]! + p.tailOverFloor;
  const e = (f: number) => energy[at(f)]!;
  const soundRun = (f: number, dir: 1 | -1) => {
    for (let q = 0; q < p.soundRun; q++) if (e(f + dir * q) < soundThr(f + dir * q)) return false;
    return true;
  };
  const frame = (t: number) => Math.round(t / hopS);
  /** A pause's level: the median energy of its frames (the floor for one under 30 ms). */
  const pauseLevel = (a: number, b: number) => (b - a < 3 ? floors[at(a)]! : percentile(energy.subarray(Math.max(0, a), Math.min(n, b)), 0.5));

  const first = p.gapFrames > 0 ? withQuietGaps(decodes[0]!.segments, (f) => e(f) < soundThr(f), hopS, p.gapFrames, p.outReach) : decodes[0]!.segments;
  const wordsOf = decodes.map((d) => d.segments.filter((s) => s.kind === 'word'));
  const out: [number, number][] = [];
  const closureFirst: boolean[] = [];
  let k = 0;
  for (let i = 0; i < first.length; i++) {
    const seg = first[i]!;
    if (seg.kind !== 'word') continue;
    closureFirst.push(CLOSURE_PHONES.has(seg.phones?.[0] ?? ''));
    let start = edgeOf(wordsOf.map((w) => w[k]!.start), p.maxSpreadS);
    let end = edgeOf(wordsOf.map((w) => w[k]!.end), p.maxSpreadS);
    k++;
    const prev = first[i - 1];
    const next = first[i + 1];
    const shift = (a: Segment | undefined, b: Segment | undefined) => (p.runningShiftS && a?.kind === 'word' && b?.kind === 'word' ? p.runningShiftS(a, b) : p.hmmShiftS);
    start += shift(prev, seg);
    end += shift(seg, next);
    const s0 = frame(seg.start);
    const s1 = frame(seg.end);
    let peak = -Infinity;
    for (let f = s0; f < s1; f++) peak = Math.max(peak, e(f));
    // the word stands out from the pause beside it (none: the clip's end, at its floor)
    const clear = (pause: Segment | undefined, contrast: number) => contrast <= 0 || peak - (pause ? pauseLevel(frame(pause.start), frame(pause.end)) : floors[at(s0)]!) >= contrast;
    if (p.starts && (!prev || prev.kind === 'pause') && clear(prev, p.minStartContrast)) {
      // the first sound from shortly before the HMM's edge on, anywhere up to the word's end
      const from = Math.max(prev ? frame(prev.start) : 0, s0 - p.outReach);
      let f = from;
      while (f < s1 - p.minWord && !soundRun(f, 1)) f++;
      if (f < s1 - p.minWord) {
        // back down the rising slope: a weak onset (h, f, s) belongs to the word
        let g = f;
        while (g - 1 >= from && f - (g - 1) <= p.slopeFrames && e(g - 1) < e(g) && e(g - 1) > tailThr(g - 1)) g--;
        start = g * hopS + p.onsetShiftS;
      }
    }
    if (p.ends && (!next || next.kind === 'pause') && clear(next, p.minEndContrast)) {
      const to = Math.min(next ? frame(next.end) : n, s1 + p.outReach) - 1;
      let f = to;
      while (f > s0 + p.minWord && !soundRun(f, -1)) f--;
      if (f > s0 + p.minWord) {
        let g = f;
        while (g + 1 <= to && g + 1 - f <= p.slopeFrames && e(g + 1) < e(g) && e(g + 1) > tailThr(g + 1)) g++;
        end = g * hopS + p.offsetShiftS;
      }
    }
    out.push([start, Math.max(end, start + hopS)]);
  }
  // keep words in order and apart
  for (let j = 1; j < out.length; j++) {
    if (out[j]![0] < out[j - 1]![1]) {
      const cut = (out[j]![0] + out[j - 1]![1]) / 2;
      out[j - 1]![1] = Math.max(out[j - 1]![0], cut);
      out[j]![0] = Math.min(out[j]![1], cut);
    }
  }
  if (change && p.snapReachS > 0) snapJoined(out, change, p, closureFirst);
  return out;
}

/** Phones (CMUdict's set, which both English models use) that begin with a closure. */
const CLOSURE_PHONES = new Set(['P', 'T', 'K', 'B', 'D', 'G', 'CH', 'JH']);

/** One edge from the decodes' edges: their mean, or the first's where they lie more than maxSpreadS apart. */
function edgeOf(edges: number[], maxSpreadS: number): number {
  if (maxSpreadS > 0 && Math.max(...edges) - Math.min(...edges) > maxSpreadS) return edges[0]!;
  return edges.reduce((a, b) => a + b, 0) / edges.length;
}

/** Boundaries of two words that meet (no pause between them) moved to the nearest spectral change (RefineParams.snapReachS). */
function snapJoined(out: [number, number][], change: SpectralChange, p: RefineParams, closureFirst: boolean[] = []): void {
  const { values, hopS, centreS, level } = change;
  const centre = (f: number) => f * hopS + centreS;
  for (let j = 1; j < out.length; j++) {
    const b = out[j]![0];
    if (Math.abs(b - out[j - 1]![1]) > 1e-6) continue; // a pause edge: refined in the energy already
    if (p.closureReachS > 0 && closureFirst[j] && level) {
      const lo = Math.max(2, Math.ceil((b - p.closureReachS - centreS) / hopS));
      const hi = Math.min(level.length - 3, Math.floor((b + p.snapReachS - centreS) / hopS));
      let best = -1;
      let bestFall = 0;
      for (let f = lo; f <= hi; f++) {
        const fall = level[f - 2]! - level[f + 2]!;
        if (fall > bestFall) (bestFall = fall), (best = f);
      }
      if (best >= 0 && bestFall >= p.closureFall) {
        const t = Math.min(Math.max(centre(best), out[j - 1]![0] + 0.01), out[j]![1] - 0.01);
        if (t > out[j - 1]![0] && t < out[j]![1]) {
          out[j - 1]![1] = t;
          out[j]![0] = t;
          continue;
        }
      }
    }
    const lo = Math.max(1, Math.ceil((b - p.snapReachS - centreS) / hopS));
    const hi = Math.min(values.length - 2, Math.floor((b + p.snapReachS - centreS) / hopS));
    let best = -1;
    let bestScore = -Infinity;
    for (let f = lo; f <= hi; f++) {
      const d = centre(f) - b;
      const score = p.snapSigmaS ? values[f]! * Math.exp(-(d * d) / (2 * p.snapSigmaS * p.snapSigmaS)) : values[f]!;
      if (score > bestScore) (bestScore = score), (best = f);
    }
    if (best < 0) continue;
    // each word keeps 10 ms
    const t = Math.min(Math.max(centre(best) + p.snapOffsetS, out[j - 1]![0] + 0.01), out[j]![1] - 0.01);
    if (t <= out[j - 1]![0] || t >= out[j]![1]) continue;
    out[j - 1]![1] = t;
    out[j]![0] = t;
  }
}

/**
 * The segments with a pause added where two words the HMM joined are separated by a quiet
 * run of at least `minFrames` that reaches within `reach` frames of their boundary; the words'
 * own edges are left to the refinement (which then treats them as pause edges).
 */
function withQuietGaps(segments: Segment[], quiet: (f: number) => boolean, hopS: number, minFrames: number, reach: number): Segment[] {
  const out: Segment[] = [];
  for (let i = 0; i < segments.length; i++) {
    const a = segments[i]!;
    out.push(a);
    const b = segments[i + 1];
    if (!b || a.kind !== 'word' || b.kind !== 'word') continue;
    const at = Math.round(a.end / hopS);
    const lo = Math.round(a.start / hopS);
    const hi = Math.round(b.end / hopS);
    // the quiet run through the frame nearest the boundary that is quiet
    let f = -1;
    for (let d = 0; d <= reach && f < 0; d++) for (const g of [at + d, at - 1 - d]) if (f < 0 && g > lo && g < hi && quiet(g)) f = g;
    if (f < 0) continue;
    let s = f;
    let e = f;
    while (s - 1 > lo && quiet(s - 1)) s--;
    while (e + 1 < hi && quiet(e + 1)) e++;
    if (e - s + 1 >= minFrames) out.push({ kind: 'pause', start: s * hopS, end: (e + 1) * hopS });
  }
  return out;
}

/**
 * The signal with its DC offset (and what lies under `cutoffHz`) taken out: a one-pole high-pass
 * filter (a DC blocker). A recording's offset adds to every frame's energy and raises the floor.
 */
export function withoutDc(samples: Float32Array, sampleRate: number, cutoffHz = 20): Float32Array {
  const r = 1 - (2 * Math.PI * cutoffHz) / sampleRate;
  const out = new Float32Array(samples.length);
  let prevX = samples[0] ?? 0;
  let prevY = 0;
  for (let i = 0; i < samples.length; i++) {
    const x = samples[i]!;
    prevY = x - prevX + r * prevY;
    prevX = x;
    out[i] = prevY;
  }
  return out;
}
