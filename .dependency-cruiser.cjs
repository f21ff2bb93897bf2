// The dependency rule (`npm run deps`, run by `npm test` before vitest): every folder of src/
// has a rank, and a module may import only modules of its own folder or of a lower rank.
// Cycles fail too, between folders and between modules. The ranks, lowest first (README
// "Layout" draws the same picture):
//
//  0 core       errors, caller, output names, paths, word timings, cancellation; log.ts and
//               request-context.ts (one-file leaves every layer logs or tags requests with)
//  1 native     the C++ addon's loader and its TypeScript references
//    media      ffmpeg/ffprobe (tool paths set by the entry point), wav, type sniffing, captions
//    storage    the storage interface (storage.ts) and its local and S3 stores
//    security   tokens and the auth / rate-limit / CORS hooks
//    http       the Fastify app both servers are built on and the one error handler
//  2 gpu-client the GPU server's client: HTTP calls that return core types
//  3 speech     engines: tts, align, asr, lipsync (local, or remote through gpu-client)
//  4 documents  readers behind one entry point (documents/model.ts; types.ts is the model)
//  5 epub, reader, video   outputs built from a document model and a timeline
//  6 voices     the voice library (engines, manifest, previews, clone references)
//  7 pipelines  document → narration → outputs; catalogue, options, the `lectern run` driver
//  8 jobs       job records, stores, queues, the job and upload services, the runner
//  9 api        the job API's route plugins        gpu-server   the GPU server's runtime and plugins
// 10 config.ts  env + flags → typed config (only the entry points read it)
// 11 service.ts wires stores, storage, worker and API for `serve` / `worker`
// 12 cli.ts     the one entry point
//
// Why this order: each layer only needs what is below it. documents sits above speech
// because a block's words are speech/words.ts's tokens (so timelines and blocks agree), and
// nothing in speech reads documents. gpu-client sits below speech because the remote speech
// engine is a client of the GPU server, and the client speaks only core types. voices is
// below pipelines and jobs: jobs resolve a voice id to an engine voice or a clone clip.
//
// .dependency-cruiser-known-violations.json lists imports that still break the rule (none now:
// feat/voice fixed the three it owned).
// `--ignore-known` lets those pass while any new violation fails.

const RANKS = [
  [0, ['core', 'log', 'request-context']],
  [1, ['native', 'media', 'storage', 'security', 'http']],
  [2, ['gpu-client']],
  [3, ['speech']],
  [4, ['documents']],
  [5, ['epub', 'reader', 'video']],
  [6, ['voices']],
  [7, ['pipelines']],
  [8, ['jobs']],
  [9, ['api', 'gpu-server']],
  [10, ['config']],
  [11, ['service']],
  [12, ['cli']],
];

// A name is a folder of src/ and the file of the same name beside it (storage/ and storage.ts).
const pathOf = (names) => `^src/(${names.join('|')})(\\.ts)?($|/)`;

// For each rank: a module of that rank may not import a module of any higher rank.
const upward = RANKS.filter(([rank]) => RANKS.some(([r]) => r > rank)).map(([rank, names]) => ({
  name: `no-upward-from-rank-${rank}`,
  comment: `${names.join(', ')} (rank ${rank}) may import only its own folder and lower ranks`,
  severity: 'error',
  from: { path: pathOf(names) },
  to: { path: pathOf(RANKS.filter(([r]) => r > rank).flatMap(([, n]) => n)) },
}));

// Same rank, different folders: no sideways imports (api ↛ gpu-server, epub ↛ reader…).
const sideways = RANKS.filter(([, names]) => names.length > 1).flatMap(([rank, names]) =>
  names.map((name) => ({
    name: `no-sideways-from-${name}`,
    comment: `${name} may not import the other rank-${rank} folders`,
    severity: 'error',
    from: { path: pathOf([name]) },
    to: { path: pathOf(names.filter((n) => n !== name)) },
  })),
);

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upward,
    ...sideways,
    {
      name: 'no-cycles',
      comment: 'modules that import each other (directly or through others) cannot be read, tested or loaded apart',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'documents-through-its-entry',
      comment: 'outside src/documents, the readers are reached through documents/model.ts only (types.ts: the model)',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/documents/' },
      to: { path: '^src/documents/', pathNot: '^src/documents/(model|types)\\.ts$' },
    },
    {
      name: 'every-rank-known',
      comment: 'a new folder or top-level file in src/ needs a rank here first',
      severity: 'error',
      from: { path: '^src/', pathNot: pathOf(RANKS.flatMap(([, n]) => n)) },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.mjs', '.js'] },
  },
};
