import { Queue } from 'bullmq';
import { createRedis } from '@switchboard/queue';
import { Admission } from '@switchboard/admission';
import { createPrisma } from '@switchboard/database';
import { createLogger } from '@switchboard/observability';
async function main() {
  const q = new Queue('turns', { connection: createRedis('redis://127.0.0.1:1'), prefix: 'x' });
  const db = createPrisma('postgresql://postgres@127.0.0.1:5432/switchboard');
  const a = new Admission(db, q, createLogger({ service: 't' }));
  const [sid, tid] = '01a20378-b1a7-7686-bd70-a38b74e36da9 01a20378-afcc-771b-b8d9-3fb28913940b'.split(' ');
  const r = await a.admit({
    tenantId: tid,
    sessionId: sid,
    kind: 'operator_prompt',
    origin: { kind: 'operator' },
    body: { type: 'text', text: 'x' },
    deliverySurface: 'http_public_enqueue',
    admissionContext: 'control_authenticated',
  });
  console.log(r);
  process.exit(0);
}
main();
