import { statSync } from 'node:fs';
import path from 'node:path';

/**
 * Bun's binary, from the npm package `bun` (a dev dependency): where it lies depends on whether npm
 * ran the package's install script. With scripts (a plain `npm ci`) the script moves the binary of
 * the platform package (`@oven/bun-<os>-<arch>`, an optional dependency) into `bun/bin/bun.exe`; with
 * `--ignore-scripts` that file stays a small placeholder and the binary stays in the platform package.
 */
export function bunBinary(): string {
  const arch = process.arch === 'arm64' ? 'aarch64' : process.arch;
  const candidates = [
    path.join(path.dirname(require.resolve('bun/package.json')), 'bin/bun.exe'),
    ...platformPackage(`@oven/bun-${process.platform}-${arch}`),
  ];
  // The placeholder is a few hundred bytes; the binary is tens of megabytes.
  const found = candidates.find((file) => sizeOf(file) > 1_000_000);
  if (!found) throw new Error(`no Bun binary in ${candidates.join(', ')}: run npm ci`);
  return found;
}

function platformPackage(name: string): string[] {
  try {
    return [path.join(path.dirname(require.resolve(`${name}/package.json`)), 'bin/bun')];
  } catch {
    return [];
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
