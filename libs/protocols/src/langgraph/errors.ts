/** An error as LangGraph's server answers it: `{detail}` with the status. */
export class LangGraphError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'LangGraphError';
  }
}
