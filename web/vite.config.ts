// Vite builds the app into dist/ (served by `lectern serve` at /); `npm run dev` proxies
// the API to a running service (LECTERN_URL, default http://127.0.0.1:8000).
import { defineConfig } from 'vitest/config';

const api = process.env.LECTERN_URL ?? 'http://127.0.0.1:8000';

export default defineConfig({
  // esbuild's own JSX transform is all this app needs (no Babel/Fast Refresh plugin).
  esbuild: { jsx: 'automatic' },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, target: 'es2022' },
  server: { proxy: { '/api': api, '/health': api, '/openapi.json': api } },
  test: {
    environment: 'happy-dom',
    include: ['test/**/*.test.{ts,tsx}'],
    reporters: ['default'],
  },
});
