import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The console is built to static files the gateway serves at /console (docs/adr/0046): every asset
 * bundled (no CDN, no web fonts), no inline script (the gateway's CSP is `script-src 'self'`), and the
 * typed API client taken from libs/client's source.
 */
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: '/console/',
  plugins: [react()],
  resolve: {
    alias: { '@switchboard/client': here('../../libs/client/src/index.ts') },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Vite would inline small assets as data: URLs; keep them files so the CSP stays plain.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: true,
    reportCompressedSize: false,
  },
  server: {
    // `npm run console:dev`: the API on the local gateway, same origin through the proxy.
    proxy: { '/v1': process.env.GATEWAY_URL ?? 'http://127.0.0.1:3000' },
  },
});
