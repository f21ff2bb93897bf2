// The client side of the GPU inference server (spec §C "Client behaviour toward the GPU server").
// Module-level functions talk to one server by URL; createGpuClient spreads work over several.
export * from './errors.ts';
export { align, synthesize, transcribe, health, DEFAULT_REQUEST_TIMEOUT_MS } from './speech.ts';
export type { AlignOptions, SynthesizeOptions, SynthesizedAudio, HealthRecord, ServerTarget } from './speech.ts';
export { generateLipsync, DEFAULT_POLL_INTERVAL_MS, MAX_CONSECUTIVE_FAILURES } from './lipsync.ts';
export type { LipsyncOptions, LipsyncResult, LipsyncStatus } from './lipsync.ts';
export { createGpuClient } from './server-pool.ts';
export type { GpuClient, GpuClientOptions, ServerState, PoolLipsyncOptions } from './server-pool.ts';
