import type { ToolSpec } from '@switchboard/providers';
import { BUILTIN_TOOLS } from './builtins';
import type { SchemaMode } from './schema';
import { toolSpec, type ToolDefinition } from './tool';

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  private readonly specs = { relaxed: new Map<string, ToolSpec>(), strict: new Map<string, ToolSpec>() };

  constructor(tools: ToolDefinition[] = BUILTIN_TOOLS) {
    for (const t of tools) this.register(t);
  }

  register(tool: ToolDefinition): void {
    if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" registered twice`);
    this.tools.set(tool.name, tool);
    this.specs.relaxed.set(tool.name, toolSpec(tool, 'relaxed'));
    this.specs.strict.set(tool.name, toolSpec(tool, 'strict'));
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  /** Names in `wanted` that no registered tool has. */
  unknown(wanted: string[]): string[] {
    return wanted.filter((n) => !this.tools.has(n));
  }

  specsFor(names: string[], mode: SchemaMode = 'relaxed'): ToolSpec[] {
    return names.flatMap((n) => {
      const spec = this.specs[mode].get(n);
      return spec ? [spec] : [];
    });
  }
}
