/**
 * A test tool for TokenJuice (docs/adr/0033), loaded into the harness through EXTRA_TOOL_MODULES:
 * `run_tests` answers, as an MCP tool would, with the corpus's failing test run (16 KB of log).
 */
import { z } from 'zod';
import { tokenjuiceCorpus } from '@switchboard/tokenjuice';
import { defineTool, type ToolDefinition } from '@switchboard/tools';

export const TEST_LOG = (
  tokenjuiceCorpus().find((e) => e.file === 'failing-test-run.log')!.value as { content: { text: string }[] }
).content[0].text;

export const runTests = defineTool({
  name: 'run_tests',
  description: 'Runs the test suite (test tool).',
  schema: z.strictObject({ command: z.string() }),
  sideEffect: 'read_only',
  timeoutMs: 5_000,
  needsApproval: false,
  execute: async () => ({ content: [{ type: 'text', text: TEST_LOG }] }),
});

export const tools = [runTests] as ToolDefinition[];

export const TOKENJUICE_TOOLS_MODULE = __filename;
