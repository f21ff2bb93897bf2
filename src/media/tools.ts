// The external programs' paths: what PATH finds, unless the entry point (src/cli.ts, from
// LECTERN_FFMPEG / LECTERN_FFPROBE through config.ts) or a worker thread's parent sets them.
// Nothing here reads the environment.

export interface ToolPaths {
  ffmpeg: string;
  ffprobe: string;
}

let paths: ToolPaths = { ffmpeg: 'ffmpeg', ffprobe: 'ffprobe' };

/** Sets the paths for this thread (called once at start-up). */
export function setToolPaths(p: ToolPaths): void {
  paths = { ...p };
}

/** The paths in effect now (read at each call, so a later setToolPaths counts). */
export function toolPaths(): ToolPaths {
  return paths;
}
