import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import {
  MemoryDocumentResponse,
  MemoryEmbeddingStatusResponse,
  MemoryPageResponse,
  newId,
  notFound,
  QueueName,
  type MemoryRecordResponse,
} from '@switchboard/contracts';
import {
  embeddingStatus,
  enqueueMemoryEmbed,
  MemorySearch,
  MemoryStore,
  type MemoryDocument,
  type MemoryFilters,
} from '@switchboard/memory';
import { EMBEDDERS } from '@switchboard/platform';
import type { EmbedderRegistry } from '@switchboard/providers';
import { sql as sqlTag, type SqlDb } from '@switchboard/store';
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
  tags: d.tags,
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
  private readonly memory: MemorySearch;

  constructor(
    @Inject(AgentsRepository) private readonly agents: AgentsRepository,
    @Inject(GATEWAY_SQL) private readonly sql: SqlDb,
    @Inject(EMBEDDERS) embedders: EmbedderRegistry,
    @Inject(getQueueToken(QueueName.MemoryEmbed)) private readonly embedQueue: Queue,
  ) {
    this.memory = new MemorySearch(sql, embedders);
    this.store = this.memory.store;
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
      'Without `q`: a listing, newest first, paged by `cursor`. With `q`: a search, best first, up to ' +
      '`limit` (default 20, at most 50) and no further pages: full-text (CJK by bigrams), by meaning ' +
      "(`vector`: the agent's embedder) or both fused (`hybrid`), per `mode` or the agent's " +
      "`memory.recall`; each hit's `path` says which found it, and `search` how the search ran (a " +
      'vector side that could not run falls back to full-text, with a `warning`). Filters for both: ' +
      '`kind`, `tags` (comma-separated, all of them), `since`/`until` (creation time).',
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
    const filters: MemoryFilters = {
      kinds: q.kind ? [q.kind] : undefined,
      tags: q.tags,
      since: q.since ? new Date(q.since) : undefined,
      until: q.until ? new Date(q.until) : undefined,
    };
    const limit = q.limit ?? 20;
    if (q.q !== undefined) {
      const r = await this.memory.search({ ...scope, ...filters, query: q.q, limit, mode: q.mode });
      return {
        data: r.hits.map((h): MemoryRecordResponse => ({
          sourceRef: h.sourceRef,
          kind: h.kind,
          title: h.title,
          provenance: { ...h.provenance },
          totalChars: h.totalChars,
          createdAt: h.createdAt,
          updatedAt: h.updatedAt,
          snippet: h.snippet,
          score: h.score,
          tags: h.tags,
          path: h.path,
        })),
        nextCursor: null,
        search: { mode: r.mode, used: r.used, warning: r.warning },
      };
    }
    const after = decodeCursor<[string]>(q.cursor, ['string']);
    const page = await this.store.list({ ...scope, ...filters, limit, after: after?.[0] });
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
        tags: i.tags,
        path: null,
      })),
      nextCursor: page.more ? encodeCursor([page.items[page.items.length - 1].id]) : null,
      search: null,
    };
  }

  @Get('embeddings')
  @Operation({
    id: 'getMemoryEmbeddings',
    summary: "Where the agent's memory vectors are (re-embedding progress)",
    description:
      '`model`: the embedder of the vector set recall compares (null: none complete, full-text only); ' +
      "`target`: the agent's `embedder`; `embedded` of `total` records have a vector of it. After " +
      'a change of embedder, recall keeps the old set until the new one is complete, then switches.',
    status: 200,
    schema: MemoryEmbeddingStatusResponse,
    errors: [404],
  })
  async embeddings(
    @TenantId() tenantId: string,
    @Param('id') id: string,
  ): Promise<MemoryEmbeddingStatusResponse> {
    const scope = await this.agent(tenantId, id);
    const status = await embeddingStatus(this.sql, scope);
    if (!status) throw notFound('agent');
    return status;
  }

  @Post()
  @HttpCode(201)
  @Operation({
    id: 'addMemory',
    summary: 'Add a note or fact to the agent’s memory',
    description:
      'Provenance `{source: "api"}`; `kind` defaults to `note`, `title` to the first line. With an ' +
      'embedder set on the agent, the record is embedded shortly after (the hooks worker).',
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
      tags: body.tags,
    });
    // Its vector (docs/adr/0050). A publish that fails (Redis away) does not fail the write: every
    // run embeds all of the agent's records lacking a vector, so the next one embeds this one too.
    if (sourceRef) await this.embedLater(scope).catch(() => undefined);
    const doc = sourceRef && (await this.store.get({ ...scope, sourceRef, maxChars: body.content.length }));
    if (!doc) throw notFound('memory record');
    return presentDocument(doc);
  }

  /** The record's vector is computed by the hooks worker when the agent has an embedder. */
  private async embedLater(scope: { tenantId: string; agentId: string }): Promise<void> {
    const row = await this.sql.first<{ on: boolean }>(
      sqlTag`SELECT embedder IS NOT NULL AS on FROM agents WHERE id = ${scope.agentId}::uuid`,
    );
    if (row?.on) await enqueueMemoryEmbed(this.embedQueue, scope);
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
