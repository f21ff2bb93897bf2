// A worker process for the kill-and-recover test: consumes tasks and never finishes them,
// printing "started <jobId> <attempt>" so the test knows when to SIGKILL it.
import { createStores } from '../../src/jobs/index.ts';
import type { ServiceConfig } from '../../src/config.ts';

const config = JSON.parse(process.argv[2]!) as ServiceConfig;
const stores = await createStores(config);
await stores.queue.consume(async (jobId, ctx) => {
  process.stdout.write(`started ${jobId} ${ctx.attempt}\n`);
  await new Promise(() => undefined);
}, 1);
process.stdout.write('ready\n');
