import type { TurnResponse } from '@switchboard/contracts';
import type { TurnDetailRead } from '@switchboard/store';

/**
 * GET /v1/turns/:id's body for a turn row as `readTurn` reads it: what every hold and every adapter
 * answers with, so a wait and a read answer the same (the gateway builds it: apps/gateway/src/api/turn-detail.ts).
 */
export type TurnDetail = (tenantId: string, turn: TurnDetailRead) => Promise<TurnResponse>;
