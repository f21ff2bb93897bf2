// One operator model process: spawned through /bin/sh in its own process group (so a kill
// reaches whatever it started), greeted with `init`, ready once it answers `hello`. It
// reports stdout messages, stderr lines and its exit to the pool that owns it.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import readline from 'node:readline';
import { PROTOCOL_VERSION, ProtocolError, parseProcessLine, type ProcessHello, type ProcessMessage, type ServerMessage } from './protocol.ts';

export interface ModelProcessOptions {
  /** Shell command line (LECTERN_TTS_PROCESS). */
  command: string;
  slot: number;
  slots: number;
  device: 'cpu' | 'cuda';
  scratchDir: string;
  /** Longest the process may take to load its model and say hello. */
  startTimeoutMs: number;
  /** Each stderr line, and stdout lines that are not protocol messages. */
  onOutput(line: string, stream: 'stderr' | 'stdout', pid: number): void;
}

export class ModelProcessStartError extends Error {
  override name = 'ModelProcessStartError';
}

const STDERR_TAIL = 12;

export class ModelProcess {
  readonly pid: number;
  hello: ProcessHello | null = null;
  /** Set once the process is gone: why, in words. */
  exitReason: string | null = null;
  /** Protocol messages after the hello. */
  onMessage: (m: ProcessMessage) => void = () => {};
  /** Called once, when the process has exited (after its last stdout line was read). */
  onExit: (reason: string) => void = () => {};
  private readonly tail: string[] = [];
  private exited!: Promise<void>;

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly opts: ModelProcessOptions,
  ) {
    this.pid = child.pid!;
  }

  /** Starts the process and resolves once it has said hello; rejects with why it did not. */
  static start(opts: ModelProcessOptions): Promise<ModelProcess> {
    const child = spawn('/bin/sh', ['-c', opts.command], {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LECTERN_TTS_PROCESS_SLOT: String(opts.slot), LECTERN_TTS_PROCESS_DEVICE: opts.device, PYTHONUNBUFFERED: '1' },
    });
    if (!child.pid) {
      return new Promise((_, reject) => child.once('error', (e) => reject(new ModelProcessStartError(`the model process could not start: ${e.message}`))));
    }
    const p = new ModelProcess(child, opts);
    return p.handshake();
  }

  /** The last stderr lines, for error messages. */
  stderrTail(): string {
    return this.tail.join(' | ');
  }

  send(msg: ServerMessage): void {
    if (this.exitReason || !this.child.stdin.writable) return;
    this.child.stdin.write(`${JSON.stringify(msg)}\n`);
  }

  /** Kills the whole process group at once. */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    try {
      process.kill(-this.pid, signal);
    } catch {
      /* already gone */
    }
  }

  /**
   * Asks the process to stop (shutdown message, stdin closed), gives it `graceMs` to exit,
   * then SIGTERM to its group, then SIGKILL after 2 s more.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.exitReason) return;
    this.send({ type: 'shutdown' });
    this.child.stdin.end();
    if (await this.exitsWithin(graceMs)) return;
    this.kill('SIGTERM');
    if (await this.exitsWithin(2000)) return;
    this.kill('SIGKILL');
    await this.exited;
  }

  private exitsWithin(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), ms);
      void this.exited.then(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  private handshake(): Promise<ModelProcess> {
    const { child, opts } = this;
    child.stdin.on('error', () => {}); // EPIPE when it died: its exit says why
    let resolveExit!: () => void;
    this.exited = new Promise((r) => (resolveExit = r));
    let settled = false;
    let startResolve!: (p: ModelProcess) => void;
    let startReject!: (e: Error) => void;
    const started = new Promise<ModelProcess>((res, rej) => {
      startResolve = res;
      startReject = rej;
    });
    const failStart = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.kill();
      const tail = this.stderrTail();
      startReject(new ModelProcessStartError(`model process (${opts.command}) ${why}${tail ? `; its stderr ended: ${tail}` : ''}`));
    };
    const timer = setTimeout(() => failStart(`did not say hello within ${Math.round(opts.startTimeoutMs / 1000)} s`), opts.startTimeoutMs);

    readline.createInterface({ input: child.stderr, crlfDelay: Infinity }).on('line', (line) => {
      if (!line.trim()) return;
      this.tail.push(line.length > 300 ? `${line.slice(0, 300)}…` : line);
      if (this.tail.length > STDERR_TAIL) this.tail.shift();
      opts.onOutput(line, 'stderr', this.pid);
    });
    const stdoutDone = new Promise<void>((r) => {
      const rl = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
      rl.on('close', r);
      rl.on('line', (line) => {
        if (!line.trim()) return;
        let msg: ProcessMessage | null;
        try {
          msg = parseProcessLine(line);
        } catch (e) {
          if (!settled) return failStart(`broke the protocol: ${(e as ProtocolError).message}`);
          opts.onOutput(`protocol error: ${(e as Error).message}: ${line.slice(0, 300)}`, 'stdout', this.pid);
          return;
        }
        if (!msg) return opts.onOutput(line, 'stdout', this.pid);
        if (!settled) {
          if (msg.type === 'hello') {
            settled = true;
            clearTimeout(timer);
            this.hello = msg.hello;
            startResolve(this);
          } else if (msg.type === 'error') failStart(`failed before its hello: ${msg.message}`);
          else failStart(`sent ${msg.type} before its hello`);
          return;
        }
        this.onMessage(msg);
      });
    });

    child.once('error', (e) => failStart(`could not start: ${e.message}`));
    child.once('exit', (code, signal) => {
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      // Its last answers may still be in the pipe: read them before reporting the exit
      // (a grandchild holding stdout open must not delay that for long).
      const done = () => {
        if (this.exitReason) return;
        this.exitReason = how;
        resolveExit();
        if (!settled) failStart(`${how} before its hello`);
        else this.onExit(how);
      };
      void stdoutDone.then(done);
      setTimeout(done, 250).unref();
    });

    this.send({ type: 'init', protocol: PROTOCOL_VERSION, slot: opts.slot, slots: opts.slots, device: opts.device, scratch_dir: opts.scratchDir });
    return started;
  }
}
