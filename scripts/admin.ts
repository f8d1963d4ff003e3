/**
 * The admin CLI: what `POST /v1/admin/tenants` does, from a shell.
 *   npm run admin -- create-tenant <name>
 *   npm run admin -- create-key <tenantId> [name]
 *   npm run admin -- revoke-key <keyId>
 *   npm run admin -- list-tenants
 */
import { loadConfig } from '@switchboard/config';
import { isUuid, newId } from '@switchboard/contracts';
import { createPrisma } from '@switchboard/database';
import { TenantsRepository } from '@switchboard/store';
import { createTenant } from '../apps/gateway/src/controllers/admin.controller';
import { generateApiKey } from '../apps/gateway/src/auth/keys';

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const db = createPrisma(loadConfig().DATABASE_URL);
  try {
    switch (command) {
      case 'create-tenant': {
        const name = args.join(' ').trim();
        if (!name) return usage('create-tenant needs a name');
        console.log(JSON.stringify(await createTenant(new TenantsRepository(db), name), null, 2));
        return 0;
      }
      case 'create-key': {
        const [tenantId, name = 'cli'] = args;
        if (!tenantId || !isUuid(tenantId)) return usage('create-key needs a tenant id');
        const tenant = await db.tenant.findUnique({ where: { id: tenantId } });
        if (!tenant) return fail(`no tenant ${tenantId}`);
        const { key, hash, prefix } = generateApiKey();
        const row = await db.apiKey.create({ data: { id: newId(), tenantId, name, prefix, hash } });
        console.log(JSON.stringify({ id: row.id, name, prefix, key }, null, 2));
        return 0;
      }
      case 'revoke-key': {
        const [keyId] = args;
        if (!keyId || !isUuid(keyId)) return usage('revoke-key needs a key id');
        const n = await db.apiKey.updateMany({
          where: { id: keyId, revokedAt: null },
          data: { revokedAt: new Date() },
        });
        console.log(n.count === 1 ? `revoked ${keyId}` : `no active key ${keyId}`);
        return n.count === 1 ? 0 : 1;
      }
      case 'list-tenants': {
        const tenants = await db.tenant.findMany({ orderBy: { createdAt: 'asc' } });
        for (const t of tenants) console.log(`${t.id}  ${t.name}`);
        return 0;
      }
      default:
        return usage(command ? `unknown command ${command}` : 'no command');
    }
  } finally {
    await db.$disconnect();
  }
}

function usage(problem: string): number {
  console.error(
    `${problem}\nusage: npm run admin -- create-tenant <name> | create-key <tenantId> [name] | revoke-key <keyId> | list-tenants`,
  );
  return 2;
}

function fail(message: string): number {
  console.error(message);
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
