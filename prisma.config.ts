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

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: path.join('prisma', 'schema.prisma'),
  migrations: { path: path.join('prisma', 'migrations') },
  adapter: async () =>
    new PrismaPg(
      new pg.Pool({ connectionString: databaseUrl, idleTimeoutMillis: 50, allowExitOnIdle: true }),
    ),
});
