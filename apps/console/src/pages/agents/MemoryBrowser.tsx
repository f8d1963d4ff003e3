import type { components } from '@switchboard/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Time } from '../../components/ui';
import { memoryQuery, pathLabel, type MemorySearchFields, type SearchMode } from '../../lib/memory-search';

type MemoryRecord = components['schemas']['MemoryRecord'];
type Kind = MemoryRecord['kind'];

/**
 * The agent's memory: newest first or the best matches of a search — full-text, by meaning (vector)
 * or both (hybrid), each hit badged with the path that found it — filtered by kind and tags; add a
 * note or fact; forget one. Memory is untrusted text (distilled from conversations and tool
 * results): plain text nodes only.
 */
export function MemoryBrowser({ agentId }: { agentId: string }) {
  const api = useApi();
  const queries = useQueryClient();
  const [draft, setDraft] = useState<MemorySearchFields>({ q: '', mode: '', kind: '', tags: '' });
  // What was searched: the form's fields as of its last submit.
  const [searched, setSearched] = useState<MemorySearchFields>(draft);
  const q = searched.q.trim();
  const memory = useQuery({
    queryKey: ['memory', agentId, memoryQuery(searched)],
    queryFn: () =>
      unwrap(
        api.GET('/v1/agents/{id}/memory', {
          params: { path: { id: agentId }, query: memoryQuery(searched) },
        }),
      ),
  });
  const edit = (patch: Partial<MemorySearchFields>) => setDraft((d) => ({ ...d, ...patch }));
  const forget = useMutation({
    mutationFn: (sourceRef: string) =>
      unwrap(
        api.DELETE('/v1/agents/{id}/memory/{sourceRef}', {
          params: { path: { id: agentId, sourceRef } },
        }),
      ),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['memory', agentId] }),
  });
  return (
    <>
      <form
        className="toolbar"
        role="search"
        aria-label="Search memory"
        onSubmit={(e) => {
          e.preventDefault();
          setSearched(draft);
        }}
      >
        <div>
          <label htmlFor="memory-q">Search memory</label>
          <input id="memory-q" type="search" value={draft.q} onChange={(e) => edit({ q: e.target.value })} />
        </div>
        <div>
          <label htmlFor="memory-mode">Search by</label>
          <select
            id="memory-mode"
            value={draft.mode}
            onChange={(e) => edit({ mode: e.target.value as '' | SearchMode })}
          >
            <option value="">the agent's recall mode</option>
            <option value="fts">full-text</option>
            <option value="vector">meaning (vector)</option>
            <option value="hybrid">both (hybrid)</option>
          </select>
        </div>
        <div>
          <label htmlFor="memory-kind">Kind</label>
          <select
            id="memory-kind"
            value={draft.kind}
            onChange={(e) => edit({ kind: e.target.value as '' | Kind })}
          >
            <option value="">all</option>
            <option value="fact">fact</option>
            <option value="episode">episode</option>
            <option value="note">note</option>
          </select>
        </div>
        <div>
          <label htmlFor="memory-tags">Tags</label>
          <input
            id="memory-tags"
            value={draft.tags}
            placeholder="ops, home"
            onChange={(e) => edit({ tags: e.target.value })}
          />
        </div>
        <button type="submit">Search</button>
        {q || searched.kind || searched.tags ? (
          <button
            type="button"
            onClick={() => {
              const blank: MemorySearchFields = { q: '', mode: '', kind: '', tags: '' };
              setDraft(blank);
              setSearched(blank);
            }}
          >
            Clear search
          </button>
        ) : null}
      </form>
      {memory.data?.search?.warning ? (
        <p className="small muted" role="status" data-testid="memory-search-warning">
          {memory.data.search.warning}
        </p>
      ) : null}
      {forget.isError ? <ErrorBox error={forget.error} /> : null}
      {memory.isPending ? (
        <Loading what="Loading memory" />
      ) : memory.isError ? (
        <ErrorBox error={memory.error} />
      ) : memory.data.data.length === 0 ? (
        <p className="empty">{q || searched.kind || searched.tags ? 'Nothing matches.' : 'No memory yet.'}</p>
      ) : (
        <div className="panel">
          <ul className="plain-list" aria-label="Memory records" data-testid="memory-list">
            {memory.data.data.map((m) => (
              <li key={m.sourceRef} data-testid="memory-record">
                <strong>{m.title}</strong> <span className="badge badge-ok">{m.kind}</span>{' '}
                {pathLabel(m.path) ? (
                  <span className="badge" data-testid="memory-path" data-path={m.path ?? undefined}>
                    found by {pathLabel(m.path)}
                  </span>
                ) : null}{' '}
                {m.tags.map((t) => (
                  <span key={t} className="badge">
                    #{t}
                  </span>
                ))}{' '}
                <span className="small muted">
                  <Time at={m.createdAt} /> · {m.totalChars} chars
                  {m.score !== null ? ` · score ${m.score.toFixed(2)}` : ''}
                </span>
                <p className="memory-text">{m.snippet}</p>
                <p className="small muted mono">Provenance: {provenance(m.provenance)}</p>
                <button
                  type="button"
                  className="danger"
                  aria-label={`Delete memory “${m.title}”`}
                  disabled={forget.isPending}
                  onClick={() => forget.mutate(m.sourceRef)}
                >
                  Delete
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
      <AddMemory agentId={agentId} />
    </>
  );
}

/** Provenance as `key: value` pairs (its values are data, shown as text). */
function provenance(p: Record<string, unknown>): string {
  const parts = Object.entries(p).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return parts.length ? parts.join(' · ') : 'unknown';
}

function AddMemory({ agentId }: { agentId: string }) {
  const api = useApi();
  const queries = useQueryClient();
  const [title, setTitle] = useState('');
  const [content, setContent] = useState('');
  const [kind, setKind] = useState<'note' | 'fact'>('note');
  const add = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/v1/agents/{id}/memory', {
          params: { path: { id: agentId } },
          body: { content, kind, ...(title.trim() ? { title: title.trim() } : {}) },
        }),
      ),
    onSuccess: () => {
      setTitle('');
      setContent('');
      return queries.invalidateQueries({ queryKey: ['memory', agentId] });
    },
  });
  return (
    <form
      className="panel form"
      aria-label="Add memory"
      onSubmit={(e) => {
        e.preventDefault();
        add.mutate();
      }}
    >
      <h2>Add to memory</h2>
      <label htmlFor="memory-title">Title (optional)</label>
      <input id="memory-title" value={title} onChange={(e) => setTitle(e.target.value)} />
      <label htmlFor="memory-add-kind">Kind of record</label>
      <select id="memory-add-kind" value={kind} onChange={(e) => setKind(e.target.value as 'note' | 'fact')}>
        <option value="note">note</option>
        <option value="fact">fact</option>
      </select>
      <label htmlFor="memory-content">Content</label>
      <textarea id="memory-content" rows={4} value={content} onChange={(e) => setContent(e.target.value)} />
      <div className="form-actions">
        <button type="submit" className="primary" disabled={add.isPending}>
          Add memory
        </button>
      </div>
      {add.isError ? <ErrorBox error={add.error} /> : null}
    </form>
  );
}
