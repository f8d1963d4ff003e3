import { newId } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';

/** A tenant with one agent (scripted/echo by default), written directly for tests below the API. */
export async function seedTenant(
  db: Db,
  name: string,
  agent: { model?: string; tools?: string[] } = {},
): Promise<{ tenantId: string; agentId: string }> {
  const tenantId = newId();
  const agentId = newId();
  await db.tenant.create({ data: { id: tenantId, name } });
  await db.agent.create({
    data: {
      id: agentId,
      tenantId,
      name: 'a',
      model: agent.model ?? 'scripted/echo',
      tools: agent.tools ?? [],
    },
  });
  return { tenantId, agentId };
}

export async function seedSession(db: Db, tenantId: string, agentId: string): Promise<string> {
  const id = newId();
  await db.session.create({ data: { id, tenantId, agentId } });
  return id;
}
