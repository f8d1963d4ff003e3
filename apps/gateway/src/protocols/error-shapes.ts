import { toJsonRpcErrorAnswer, toLangGraphErrorAnswer, toOpenAiErrorAnswer } from '@switchboard/protocols';
import { ErrorShapes } from '../platform/errors';

/**
 * Every protocol's error shape, added to the error filter's registry (docs/adr/0005): the name a
 * route gives `@ErrorShapeOf(...)` → the protocol's mapping (`@switchboard/protocols`). A new
 * protocol adds its line here.
 */
export const protocolErrorShapes = (): ErrorShapes =>
  new ErrorShapes()
    .add('openai', toOpenAiErrorAnswer)
    .add('jsonrpc', (err, native) => toJsonRpcErrorAnswer(native(err)))
    .add('langgraph', toLangGraphErrorAnswer);
