// Validates an OpenAPI document against the OpenAPI Initiative's JSON schema for its version, with
// @seriousme/openapi-schema-validator (an ES module, hence this script): `npm run openapi:validate --
// <URL or file>` (default http://localhost:3000/docs/openapi.json). Prints the errors and exits 1
// when it is invalid; test/e2e/openapi.e2e.spec.ts runs it on the gateway's document.
import { readFile } from 'node:fs/promises';
import { Validator } from '@seriousme/openapi-schema-validator';

const source = process.argv[2] ?? 'http://localhost:3000/docs/openapi.json';
const text = /^https?:\/\//.test(source)
  ? await (await fetch(source)).text()
  : await readFile(source, 'utf8');
const result = await new Validator().validate(JSON.parse(text));
if (result.valid) {
  console.log(`valid OpenAPI ${JSON.parse(text).openapi}: ${source}`);
} else {
  console.error(JSON.stringify(result.errors, null, 2));
  process.exit(1);
}
