import type { ToolSpec } from '@switchboard/providers';
import { BUILTIN_TOOLS } from './builtins';
import type { SchemaMode } from './schema';
import { toolSpec, type ToolDefinition } from './tool';

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  private readonly specs = { relaxed: new Map<string, ToolSpec>(), strict: new Map<string, ToolSpec>() };

  constructor(
    tools: ToolDefinition[] = BUILTIN_TOOLS,
    /** A registry this one extends (a turn's view, `withTurnTools`): its tools are looked up after ours. */
    private readonly parent?: ToolRegistry,
  ) {
    for (const t of tools) this.register(t);
  }

  /**
   * The process-wide tools plus `extra`, the tools resolved for one turn (an agent's MCP tools,
   * docs/adr/0023). The registry itself is untouched; the view costs only the extra tools' specs.
   */
  withTurnTools(extra: ToolDefinition[]): ToolRegistry {
    // A process-wide tool keeps its name: a turn's tool cannot shadow it.
    const own = extra.filter((t) => !this.get(t.name));
    return own.length === 0 ? this : new ToolRegistry(own, this);
  }

  register(tool: ToolDefinition): void {
    if (this.tools.has(tool.name) || this.parent?.get(tool.name)) {
      throw new Error(`tool "${tool.name}" registered twice`);
    }
    this.tools.set(tool.name, tool);
    this.specs.relaxed.set(tool.name, toolSpec(tool, 'relaxed'));
    this.specs.strict.set(tool.name, toolSpec(tool, 'strict'));
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name) ?? this.parent?.get(name);
  }

  names(): string[] {
    return [...(this.parent?.names() ?? []), ...this.tools.keys()];
  }

  /** Names in `wanted` that no registered tool has. */
  unknown(wanted: string[]): string[] {
    return wanted.filter((n) => !this.get(n));
  }

  specsFor(names: string[], mode: SchemaMode = 'relaxed'): ToolSpec[] {
    return names.flatMap((n) => {
      const spec = this.specs[mode].get(n) ?? this.parent?.specsFor([n], mode)[0];
      return spec ? [spec] : [];
    });
  }
}
