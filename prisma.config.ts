/**
 * Prisma CLI configuration: the schema engine runs as WebAssembly through the pg
 * driver adapter, so `generate`, `migrate diff` and `migrate deploy` work with no
 * native engine download (docs/adr/0002-prisma-engine.md).
 */
import path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { defineConfig } from 'prisma/config';
import pg from 'pg';

// Upstream bug (prisma/orm#27403): the pg adapter cannot decode Postgres' `name`
// type (OID 19), which the migration engine's catalog queries return. Reporting
// it as `text` (OID 25) is exact for these queries. Applies to the CLI only.
const PG_NAME_OID = 19;
const PG_TEXT_OID = 25;
type FieldDescription = { dataTypeID: number };
type AddFields = (this: unknown, fields: FieldDescription[]) => void;
const ResultProto = (pg as unknown as { Result: { prototype: { addFields: AddFields } } }).Result.prototype;
const addFields = ResultProto.addFields;
ResultProto.addFields = function (this: unknown, fields: FieldDescription[]) {
  for (const field of fields) if (field.dataTypeID === PG_NAME_OID) field.dataTypeID = PG_TEXT_OID;
  return addFields.call(this, fields);
};

const databaseUrl = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/switchboard';

// Upstream: the pg adapter's executeScript (which applies a migration) splits the script on every `;`,
// inside comments and `$$` bodies too, and runs the pieces one by one, so a migration with a PL/pgSQL
// function or DO block cannot apply (20261128000000_partition_by_time has both), and one that fails
// half-way stays half-applied. Sent whole, Postgres' simple query protocol parses it as psql would and
// runs it as one implicit transaction: a migration applies entirely or not at all. (No migration may use
// a statement that cannot run in a transaction block, e.g. CREATE INDEX CONCURRENTLY.) CLI only.
type ScriptAdapter = {
  client: { query(sql: string): Promise<unknown> };
  onError(err: unknown): never;
  executeScript(script: string): Promise<void>;
};
class WholeScriptPg extends PrismaPg {
  override async connect() {
    const adapter = await super.connect();
    const a = adapter as unknown as ScriptAdapter;
    a.executeScript = async (script: string) => {
      try {
        await a.client.query(script);
      } catch (err) {
        a.onError(err);
      }
    };
    return adapter;
  }
}

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: path.join('prisma', 'schema.prisma'),
  migrations: { path: path.join('prisma', 'migrations') },
  adapter: async () =>
    new WholeScriptPg(
      new pg.Pool({ connectionString: databaseUrl, idleTimeoutMillis: 50, allowExitOnIdle: true }),
    ),
});
