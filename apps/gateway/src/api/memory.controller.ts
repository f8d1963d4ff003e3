import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import {
  MemoryDocumentResponse,
  MemoryPageResponse,
  newId,
  notFound,
  type MemoryRecordResponse,
} from '@switchboard/contracts';
import { MemoryStore, type MemoryDocument, type MemoryKind } from '@switchboard/memory';
import type { SqlDb } from '@switchboard/store';
import { AgentsRepository } from '@switchboard/subagents';
import { TenantId } from '../platform/auth/guard';
import { AddMemoryDto, MemoryQueryDto, MemoryRecordQueryDto } from './dto';
import { BODY_ERRORS, Operation, TenantApi } from '../platform/openapi';
import { decodeCursor, encodeCursor, pathId } from './presenters';
import { GATEWAY_SQL } from './streams.controller';

/** A title for a note given none: its first line, cut to 80 characters. */
function titleOf(content: string): string {
  const line = content.trim().split('\n', 1)[0].trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

const presentDocument = (d: MemoryDocument): MemoryDocumentResponse => ({
  sourceRef: d.sourceRef,
  kind: d.kind,
  title: d.title,
  provenance: { ...d.provenance },
  totalChars: d.totalChars,
  createdAt: d.createdAt,
  updatedAt: d.updatedAt,
  content: d.content,
  truncated: d.truncated,
});

/**
 * An agent's memory over HTTP (docs/adr/0022): inspect (list or search), add a note or fact, read
 * one record's exact content, forget one. The agent must be the caller tenant's (else 404); the
 * store filters every statement by tenant and agent as well.
 */
@TenantApi('memory')
@Controller('v1/agents/:id/memory')
export class MemoryController {
  private readonly store: MemoryStore;

  constructor(
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(GATEWAY_SQL) sql: SqlDb,
  ) {
    this.store = new MemoryStore(sql);
  }

  private async agent(tenantId: string, id: string): Promise<{ tenantId: string; agentId: string }> {
    const agent = await this.agents.find(tenantId, pathId(id, 'agent'));
    if (!agent) throw notFound('agent');
    return { tenantId, agentId: agent.id };
  }

  @Get()
  @Operation({
    id: 'listMemory',
    summary: "The agent's memory records, newest first, or the best matches of `q`",
    description:
      'Without `q`: a listing, newest first, paged by `cursor`. With `q`: a full-text search (CJK by ' +
      'bigrams), best first, up to `limit` (default 20, at most 50) and no further pages.',
    status: 200,
    schema: MemoryPageResponse,
    errors: [400, 404],
  })
  async list(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Query() q: MemoryQueryDto,
  ): Promise<MemoryPageResponse> {
    const scope = await this.agent(tenantId, id);
    const kinds: MemoryKind[] | undefined = q.kind ? [q.kind] : undefined;
    const limit = q.limit ?? 20;
    if (q.q !== undefined) {
      const hits = await this.store.search({ ...scope, query: q.q, limit, kinds });
      return {
        data: hits.map((h): MemoryRecordResponse => ({
          sourceRef: h.sourceRef,
          kind: h.kind,
          title: h.title,
          provenance: { ...h.provenance },
          totalChars: h.totalChars,
          createdAt: h.createdAt,
          updatedAt: h.updatedAt,
          snippet: h.snippet,
          score: h.score,
        })),
        nextCursor: null,
      };
    }
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const page = await this.store.list({ ...scope, kinds, limit, after: after?.[0] });
    return {
      data: page.items.map((i) => ({
        sourceRef: i.sourceRef,
        kind: i.kind,
        title: i.title,
        provenance: { ...i.provenance },
        totalChars: i.totalChars,
        createdAt: i.createdAt,
        updatedAt: i.updatedAt,
        snippet: i.preview,
        score: null,
      })),
      nextCursor: page.more ? encodeCursor([page.items[page.items.length - 1].id]) : null,
    };
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'addMemory',
    summary: 'Add a note or fact to the agent’s memory',
    description: 'Provenance `{source: "api"}`; `kind` defaults to `note`, `title` to the first line.',
    status: 201,
    schema: MemoryDocumentResponse,
    errors: [...BODY_ERRORS, 404],
  })
  async add(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Body() body: AddMemoryDto,
  ): Promise<MemoryDocumentResponse> {
    const scope = await this.agent(tenantId, id);
    const sourceRef = await this.store.add({
      ...scope,
      kind: body.kind ?? 'note',
      title: body.title ?? titleOf(body.content),
      content: body.content,
      // Every POST is a record of its own.
      dedupeKey: `api:${newId()}`,
      provenance: { source: 'api' },
    });
    const doc = sourceRef && (await this.store.get({ ...scope, sourceRef, maxChars: body.content.length }));
    if (!doc) throw notFound('memory record');
    return presentDocument(doc);
  }

  @Get(':sourceRef')
  @Operation({
    id: 'getMemory',
    summary: "A memory record's exact content",
    description: 'At most `maxChars` characters (default 12,000, at most 50,000); `truncated` tells.',
    status: 200,
    schema: MemoryDocumentResponse,
    errors: [400, 404],
  })
  async get(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('sourceRef') sourceRef: string,
    @Query() q: MemoryRecordQueryDto,
  ): Promise<MemoryDocumentResponse> {
    const scope = await this.agent(tenantId, id);
    const doc = await this.store.get({ ...scope, sourceRef, maxChars: q.maxChars });
    if (!doc) throw notFound('memory record');
    return presentDocument(doc);
  }

  @Delete(':sourceRef')
  @HttpCode(204)
  @Operation({
    id: 'forgetMemory',
    summary: 'Forget a memory record',
    description:
      "Forgets one record of the agent's memory: it no longer shows in listings, searches or recall. 404 when the agent or the record is unknown.",
    status: 204,
    errors: [404],
  })
  async forget(
    @TenantId() tenantId: string,
    @Param('id') id: string,
    @Param('sourceRef') sourceRef: string,
  ): Promise<void> {
    const scope = await this.agent(tenantId, id);
    if (!(await this.store.forget({ ...scope, sourceRef }))) throw notFound('memory record');
  }
}
