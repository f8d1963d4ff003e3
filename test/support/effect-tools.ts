/**
 * Side-effecting test tools that count their effects in files, loaded into spawned workers through
 * EXTRA_TOOL_MODULES. The model passes a path prefix `p` (the scripted fixtures use the user's
 * message): each run appends a line to `p.runs`, writes `p.started`, waits until the test creates
 * `p.release`, then makes its effect by appending a line to `p.effects`.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { defineTool, type ToolContext, type ToolDefinition } from '@switchboard/tools';

const schema = z.strictObject({ path: z.string().min(1) });

/** Resolves once `file` exists; rejects when the call's signal aborts. */
function waitForFile(file: string, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      if (existsSync(file)) done(resolve);
    }, 20);
    const onAbort = () => done(() => reject(new Error('aborted')));
    function done(finish: () => void) {
      clearInterval(timer);
      signal.removeEventListener('abort', onAbort);
      finish();
    }
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

async function effect(arg: string, ctx: ToolContext, dedupe: boolean): Promise<unknown> {
  // The first absolute path in the argument: untrusted input reaches the model framed as evidence.
  const path = /\/[^\s<>"']+/.exec(arg)?.[0] ?? arg;
  appendFileSync(`${path}.runs`, `${JSON.stringify({ key: ctx.idempotencyKey, resumed: ctx.resumed })}\n`);
  writeFileSync(`${path}.started`, ctx.idempotencyKey);
  await waitForFile(`${path}.release`, ctx.signal);
  const done = existsSync(`${path}.effects`) ? readFileSync(`${path}.effects`, 'utf8').split('\n') : [];
  // A tool that honours the idempotency key makes its effect once per key, however often it runs.
  if (!dedupe || !done.includes(ctx.idempotencyKey))
    appendFileSync(`${path}.effects`, `${ctx.idempotencyKey}\n`);
  return { effected: true };
}

export const effectOnce = defineTool({
  name: 'effect_once',
  description: 'Makes a side effect that must happen once (test tool).',
  schema,
  sideEffect: 'local_write',
  timeoutMs: 60_000,
  needsApproval: false,
  execute: ({ path }, ctx) => effect(path, ctx, false),
});

export const effectIdempotent = defineTool({
  name: 'effect_idempotent',
  description: 'Makes a side effect, deduplicated by the idempotency key (test tool).',
  schema,
  sideEffect: 'local_write',
  timeoutMs: 60_000,
  needsApproval: false,
  honoursIdempotencyKey: true,
  execute: ({ path }, ctx) => effect(path, ctx, true),
});

export const tools = [effectOnce, effectIdempotent] as ToolDefinition[];

/** Lines of one of the tool's files (`runs`, `effects`), empty when absent. */
export function lines(path: string, kind: 'runs' | 'effects'): string[] {
  const file = `${path}.${kind}`;
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

export const EFFECT_TOOLS_MODULE = __filename;
