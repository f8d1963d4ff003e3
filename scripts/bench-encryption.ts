/**
 * The per-turn CPU cost of encryption at rest (docs/adr/0067), mode off vs on, in one run (not a
 * test). One process, a database of its own: for each mode, N turns' worth of what the data layer does
 * per turn — the admission's body sealed, a checkpoint write set with a tool call sealed (transcript
 * messages, tool call row, final text, journal events, context parts), and the transcript read back
 * and opened (a SqlDb read of the session's messages) — measured as process CPU (user + system).
 *
 *   npm run bench:encryption -- --turns 2000 [--messages 12]
 *
 * For the whole message path through real processes, compare `npm run bench -- --count` with and
 * without `--env ENCRYPTION_KEYS=k1:<base64> --env ENCRYPTION_DEFAULT_MODE=on`.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { newId } from '@switchboard/contracts';
import { poolOf, setContentCipher, sealJson } from '@switchboard/database';
import { LocalKeyRing, TenantCipher } from '@switchboard/platform';
import { sealCheckpoint, sql, sqlDbFor, type CheckpointWrites } from '@switchboard/store';
import { createTestEnv, seedTenantSession, seedTurn, transcriptMessage } from '@switchboard/testing';

const { values } = parseArgs({
  options: { turns: { type: 'string', default: '2000' }, messages: { type: 'string', default: '12' } },
});
const TURNS = Number(values.turns);
const MESSAGES = Number(values.messages);
const text = (n: number) => 'The quick brown fox jumps over the lazy dog. '.repeat(n);

async function main() {
  const env = await createTestEnv();
  try {
    const cipher = new TenantCipher(
      env.db,
      LocalKeyRing.fromSpec(`k1:${randomBytes(32).toString('base64')}`),
    );
    setContentCipher(cipher);
    const db = sqlDbFor(poolOf(env.db), 'bench');
    const results: Record<string, { cpuMsPerTurn: number; wallMsPerTurn: number }> = {};
    for (const mode of ['off', 'on'] as const) {
      const s = await seedTenantSession(env.db, `bench-${mode}`);
      await env.db.tenant.update({ where: { id: s.tenantId }, data: { settings: { encryption: { mode } } } });
      const turn = await seedTurn(env.db, s, { status: 'completed' });
      const rows = Array.from({ length: MESSAGES }, (_, i) =>
        transcriptMessage(s, turn, i, i % 2 ? 'assistant' : 'user', text(8)),
      );
      for (const r of rows) r.body = (await sealJson(s.tenantId, r.body)) as never;
      await env.db.message.createMany({ data: rows });
      const writes = (): CheckpointWrites => ({
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        turnId: turn.id,
        lease: null,
        events: [
          { id: newId(), turnId: turn.id, type: 'text_delta', data: { text: text(6) } },
          {
            id: newId(),
            turnId: turn.id,
            type: 'tool_call_started',
            data: { callId: 'c1', name: 'http_fetch' },
          },
        ],
        messages: [0, 1].map((i) => ({
          ...transcriptMessage(s, turn, 100 + i, 'assistant', text(6)),
          priority: 'normal',
          toolCalls: [{ id: 'c1', name: 'http_fetch', arguments: '{"url":"http://x"}' }],
        })),
        toolCalls: [
          {
            id: newId(),
            callId: 'c1',
            name: 'http_fetch',
            arguments: { url: 'http://x' },
            sideEffect: 'network',
            idempotencyKey: 'k',
            status: 'completed',
            result: { text: text(20) },
            durationMs: 5,
          },
        ],
        contextParts: [{ hash: 'h', content: { role: 'system', content: text(20) }, tokens: 100 }],
      });
      const read = () =>
        db.rows(sql`SELECT body FROM messages WHERE session_id = ${s.sessionId}::uuid ORDER BY position`);
      // Warm up (keys unwrapped and cached, V8 optimised), then measure.
      for (let i = 0; i < 50; i++) {
        await sealJson(s.tenantId, { type: 'text', text: text(4) });
        await sealCheckpoint(writes());
        await read();
      }
      const baseline = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < TURNS; i++) {
        await sealJson(s.tenantId, { type: 'text', text: text(4) });
        await sealCheckpoint(writes());
        await read();
      }
      const cpu = process.cpuUsage(baseline);
      results[mode] = {
        cpuMsPerTurn: Number(((cpu.user + cpu.system) / 1000 / TURNS).toFixed(4)),
        wallMsPerTurn: Number(((performance.now() - t0) / TURNS).toFixed(4)),
      };
    }
    console.log(JSON.stringify({ turns: TURNS, messagesReadPerTurn: MESSAGES, ...results }, null, 2));
    console.log(
      `encryption on costs ${(results.on.cpuMsPerTurn - results.off.cpuMsPerTurn).toFixed(3)} ms CPU per turn ` +
        `(off ${results.off.cpuMsPerTurn} ms, on ${results.on.cpuMsPerTurn} ms; includes the transcript read's own Postgres round trip)`,
    );
  } finally {
    setContentCipher(undefined);
    await env.cleanup();
  }
}

void main();
