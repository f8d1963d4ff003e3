/**
 * A test tool for cancel and interjection tests, loaded into spawned workers through
 * EXTRA_TOOL_MODULES: `hold` writes `<path>.started`, then waits until the test creates
 * `<path>.release` (answering `{held: true}`) or the call's signal aborts (writing `<path>.aborted`).
 * It is side-effecting, so two calls of one round run one after the other.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { defineTool, type ToolDefinition } from '@switchboard/tools';

export const hold = defineTool({
  name: 'hold',
  description: 'Holds until released (test tool).',
  schema: z.strictObject({ path: z.string().min(1) }),
  sideEffect: 'local_write',
  timeoutMs: 60_000,
  needsApproval: false,
  execute: ({ path }, ctx) =>
    new Promise((resolve, reject) => {
      writeFileSync(`${path}.started`, ctx.idempotencyKey);
      const timer = setInterval(() => {
        if (!existsSync(`${path}.release`)) return;
        clearInterval(timer);
        resolve({ held: true });
      }, 20);
      ctx.signal.addEventListener(
        'abort',
        () => {
          clearInterval(timer);
          writeFileSync(`${path}.aborted`, String(ctx.signal.reason));
          reject(new Error('aborted'));
        },
        { once: true },
      );
    }),
});

export const tools = [hold] as ToolDefinition[];

export const CONTROL_TOOLS_MODULE = __filename;
