import path from 'node:path';
import type { ToolDefinition } from './tool';

/**
 * Tools from extra modules (EXTRA_TOOL_MODULES): each module exports `tools`, a list of tool
 * definitions, registered next to the built-ins. Meant for tests and local experiments that need a
 * tool the product does not ship; a production deployment leaves it unset. A module that does not
 * load or exports no tools fails start-up, naming the module.
 */
export function loadToolModules(modules: string[] = []): ToolDefinition[] {
  return modules.flatMap((m) => {
    const file = path.resolve(m);
    let exported: unknown;
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded by path at start-up, on purpose
      exported = (require(file) as { tools?: unknown }).tools;
    } catch (err) {
      throw new Error(`EXTRA_TOOL_MODULES: cannot load ${file}: ${(err as Error).message}`);
    }
    if (
      !Array.isArray(exported) ||
      exported.length === 0 ||
      !exported.every(
        (t) =>
          typeof (t as ToolDefinition)?.name === 'string' &&
          typeof (t as ToolDefinition).execute === 'function',
      )
    ) {
      throw new Error(
        `EXTRA_TOOL_MODULES: ${file} must export \`tools\`, a non-empty list of tool definitions`,
      );
    }
    return exported as ToolDefinition[];
  });
}
