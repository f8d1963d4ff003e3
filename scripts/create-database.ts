/** Creates the database named in DATABASE_URL when it does not exist yet. */
import { Client } from 'pg';
import { loadConfig } from '@switchboard/config';

async function main() {
  const url = new URL(loadConfig().DATABASE_URL);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new Error(`refusing to create a database named "${name}"`);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!exists.rowCount) {
      await client.query(`CREATE DATABASE "${name}"`);
      console.log(`created database ${name}`);
    }
  } finally {
    await client.end();
  }
}

main().catch((err: unknown) => {
  console.error(`could not prepare the database: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
