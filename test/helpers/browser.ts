// Debian's chromium driven by playwright-core, headless, with a fresh profile, nothing in the
// background that would reach the network, and audio allowed to start without a gesture.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lectern-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--autoplay-policy=no-user-gesture-required',
    ],
    viewport: { width: 1100, height: 800 },
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Extracts a ZIP (yauzl) into dir; returns the entry names. */
export async function unzipTo(zipFile: string, dir: string): Promise<string[]> {
  const yauzl = (await import('yauzl')).default;
  const names: string[] = [];
  await new Promise<void>((resolve, reject) => {
    yauzl.open(zipFile, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err);
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry) => {
        names.push(entry.fileName);
        const dest = path.join(dir, entry.fileName);
        if (!dest.startsWith(dir + path.sep)) return reject(new Error(`unsafe entry ${entry.fileName}`));
        fs.mkdirSync(path.dirname(dest), { recursive: true });
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e);
          stream.pipe(fs.createWriteStream(dest)).on('close', () => zip.readEntry());
        });
      });
      zip.readEntry();
    });
  });
  return names;
}
