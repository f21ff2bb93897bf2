// `lectern <command>`: one entry point for every process Lectern runs.
import path from 'node:path';
import { checkRunFlags, ConfigError, loadGpuServerConfig, loadServiceConfig, loadToolPaths, parseArgs, type Flags } from './config.ts';
import { oneLine } from './core/errors.ts';
import { createLogger, type Logger } from './log.ts';
import { setToolPaths } from './media/tools.ts';

const USAGE = `Usage: lectern <command> [options]

Commands:
  serve        job API, voice API, uploads and events, with the worker in-process
               (--port 8000 --host 127.0.0.1 --data-dir ./data --no-worker)
  worker       a pipeline worker consuming the queue (distributed mode: any number)
  gpu-server   the GPU inference server
               (--backend piper|espeak|process --device cpu|cuda --max-batch 8 --batch-window-ms 30
                --host 127.0.0.1 --port 8100 --aligner auto --lipsync-provider auto --workers N)
               any speech model: --backend process --tts-process 'python3 adapter.py'
                (examples/tts-process/: the reference adapter and its protocol)
  run PIPELINE FILE
               one pipeline without the API: lectern run audio notes.md --out notes.mp3
               (--language en-US --voice ID --speed 1.0 --data-dir ./data --format FMT
                --tts-backend auto|espeak|piper --aligner auto|hmm|dtw)
               no --language: the one the document declares (EPUB, PDF), else en-US
               no --voice: the language's default voice (Piper where installed for it, else eSpeak NG)
               lectern run highlight paper.pdf --format mp4|reader (--width 1280 --height 720 --fps 24)
               your own recording: lectern run readalong book.epub --audio ch1.mp3 --audio ch2.mp3
                (--format epub|mp4|reader --out book-readalong.epub; any language eSpeak NG speaks, --language ru-RU …)

Security (serve, worker, gpu-server):
  Bearer tokens come from LECTERN_API_TOKENS / LECTERN_GPU_TOKENS (name:token,…) or
  --tokens-file FILE (one name:token per line). Without tokens a server listens on
  loopback only, unless --insecure is given. Each token sees only the jobs and uploads
  it made; names in LECTERN_API_ADMINS (comma-separated) see everything.
  SIGTERM: stop accepting, let requests finish (LECTERN_SHUTDOWN_GRACE_MS), hand running
  jobs back to the queue.

Configuration comes from flags and LECTERN_* environment variables (see README.md).`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { positional, flags } = parseArgs(rest);
  setToolPaths(loadToolPaths());
  if (!command || command === 'help' || command === '--help' || flags.help) {
    process.stdout.write(`${USAGE}\n`);
    return command ? 0 : 1;
  }
  switch (command) {
    case 'serve':
      return serve(flags);
    case 'worker':
      return worker(flags);
    case 'gpu-server':
      return gpuServer(flags);
    case 'run':
      return run(positional, flags, rest);
    default:
      process.stderr.write(`lectern: unknown command "${command}"\n\n${USAGE}\n`);
      return 2;
  }
}

/** Keeps the process up until SIGINT/SIGTERM, then closes in order. */
function untilSignal(log: Logger, close: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const stop = (sig: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal: sig }, 'shutting down');
      close().then(
        () => resolve(0),
        (err) => {
          log.error({ err: oneLine(err) }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
}

async function serve(flags: Flags): Promise<number> {
  const config = loadServiceConfig(flags);
  const log = createLogger(config.logLevel, 'lectern');
  const { startService } = await import('./service.ts');
  const svc = await startService(config, log);
  process.stderr.write(`lectern: serving on ${svc.url} (${svc.stores.mode} mode, files in ${svc.storage.where})\n`);
  return untilSignal(log, () => svc.close());
}

async function worker(flags: Flags): Promise<number> {
  const config = loadServiceConfig(flags);
  const log = createLogger(config.logLevel, 'lectern-worker');
  const { startStandaloneWorker } = await import('./service.ts');
  const w = await startStandaloneWorker(config, log);
  return untilSignal(log, () => w.close());
}

async function gpuServer(flags: Flags): Promise<number> {
  const config = loadGpuServerConfig(flags);
  const log = createLogger(config.logLevel, 'lectern-gpu');
  const { startGpuServer } = await import('./gpu-server/index.ts');
  const srv = await startGpuServer(config, log);
  process.stderr.write(`lectern: GPU inference server on ${srv.url}\n`);
  return untilSignal(log, () => srv.close());
}

const intFlag = (v: unknown): number | undefined => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined);

/** Every value of a flag given more than once (`--audio a.mp3 --audio b.mp3`); parseArgs keeps the last. */
function repeated(argv: string[], name: string): string[] {
  const out: string[] = [];
  argv.forEach((a, i) => {
    if (a.startsWith(`--${name}=`)) out.push(a.slice(name.length + 3));
    else if (a === `--${name}` && argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) out.push(argv[i + 1]!);
  });
  return out;
}

async function run(positional: string[], flags: Flags, rest: string[]): Promise<number> {
  const [pipelineName, file] = positional;
  if (!pipelineName || !file) {
    process.stderr.write(`lectern run: give a pipeline and a file, e.g. lectern run audio notes.md\n`);
    return 2;
  }
  checkRunFlags(flags);
  const config = loadServiceConfig(flags);
  const log = createLogger(typeof flags['log-level'] === 'string' ? flags['log-level'] : 'warn', 'lectern-run');
  const { runPipelineOnFile } = await import('./pipelines/run-file.ts');
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort(new Error('interrupted')));
  const out = await runPipelineOnFile({
    config,
    log,
    pipeline: pipelineName,
    file: path.resolve(file),
    out: typeof flags.out === 'string' ? path.resolve(flags.out) : null,
    language: typeof flags.language === 'string' ? flags.language : null,
    voice: typeof flags.voice === 'string' ? flags.voice : null,
    speed: typeof flags.speed === 'string' ? Number(flags.speed) : 1,
    format: typeof flags.format === 'string' ? flags.format : undefined,
    audio: repeated(rest, 'audio').map((f) => path.resolve(f)),
    video: { width: intFlag(flags.width), height: intFlag(flags.height), fps: intFlag(flags.fps) },
    signal: controller.signal,
    onProgress: (phase, current, total) => {
      if (process.stderr.isTTY) process.stderr.write(`\r${phase} ${current}/${total}   `);
    },
  });
  if (process.stderr.isTTY) process.stderr.write('\n');
  process.stdout.write(`${out.files.join('\n')}\n`);
  const source = out.recording
    ? `your recording; ${out.recording.wordsTimed} of ${out.recording.words} words of the text found in it, the rest marked skipped`
    : `${out.engine}${out.voice ? ` ${out.voice}` : ''}`;
  process.stderr.write(`lectern: ${out.duration.toFixed(1)} s of narration (${source}) → ${out.files[0]}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0 || process.argv[2] === 'run') process.exit(code);
    // After an orderly shutdown the loop should drain by itself; a handle some library left
    // open must not turn a SIGTERM into a hang (the supervisor would SIGKILL mid-cleanup).
    setTimeout(() => {
      process.stderr.write('lectern: handles still open after shutdown; exiting\n');
      process.exit(0);
    }, 3000).unref();
  },
  (err) => {
    const msg = err instanceof ConfigError ? `configuration: ${err.message}` : oneLine(err);
    process.stderr.write(`lectern: ${msg}\n`);
    if (process.env.LECTERN_DEBUG) process.stderr.write(`${(err as Error)?.stack}\n`);
    process.exit(1);
  },
);
