#!/usr/bin/env node
// Lectern runs its TypeScript sources through tsx: no separate build output that could go stale.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli.ts');
