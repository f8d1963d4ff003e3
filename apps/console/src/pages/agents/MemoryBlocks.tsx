import type { components } from '@switchboard/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Time } from '../../components/ui';

type Block = components['schemas']['MemoryBlock'];

/**
 * The agent's memory blocks (docs/adr/0051): always in its system prompt, after the stored prompt.
 * Each can be edited and saved over the version that was read (a 409 says the agent or another
 * operator changed it meanwhile), locked against the agent's edits, deleted, and its versions read.
 * Text the agent wrote came from a model: shown as text (a textarea's value), never as markup.
 */
export function MemoryBlocks({ agentId }: { agentId: string }) {
  const api = useApi();
  const blocks = useQuery({
    queryKey: ['blocks', agentId],
    queryFn: () => unwrap(api.GET('/v1/agents/{id}/blocks', { params: { path: { id: agentId } } })),
  });
  return (
    <>
      {blocks.isPending ? (
        <Loading what="Loading memory blocks" />
      ) : blocks.isError ? (
        <ErrorBox error={blocks.error} />
      ) : blocks.data.data.length === 0 ? (
        <p className="empty">No memory blocks yet.</p>
      ) : (
        <ul className="plain-list" aria-label="Memory blocks">
          {blocks.data.data.map((b) => (
            // Keyed by version: a newer version read from the API resets the editor to it.
            <BlockEditor key={`${b.name}@${b.version}`} agentId={agentId} block={b} />
          ))}
        </ul>
      )}
      <NewBlock agentId={agentId} />
    </>
  );
}

function BlockEditor({ agentId, block: b }: { agentId: string; block: Block }) {
  const api = useApi();
  const queries = useQueryClient();
  const [content, setContent] = useState(b.content);
  const [readOnly, setReadOnly] = useState(b.readOnly);
  const [showVersions, setShowVersions] = useState(false);
  const path = { params: { path: { id: agentId, name: b.name } } };
  // The list only: a deleted block's versions are not asked for again.
  const refresh = () => queries.invalidateQueries({ queryKey: ['blocks', agentId], exact: true });
  const save = useMutation({
    mutationFn: () =>
      unwrap(
        api.PUT('/v1/agents/{id}/blocks/{name}', {
          ...path,
          body: { content, readOnly, expectedVersion: b.version },
        }),
      ),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/v1/agents/{id}/blocks/{name}', path)),
    onSuccess: refresh,
  });
  const id = `block-${b.name}`;
  const dirty = content !== b.content || readOnly !== b.readOnly;
  return (
    <li data-testid="memory-block">
      <section className="panel form" aria-labelledby={`${id}-h`}>
        <h2 id={`${id}-h`} className="mono">
          {b.name}
        </h2>
        <p className="small muted">
          {b.description ? `${b.description} · ` : ''}version {b.version} · written by {b.writtenBy}
          {b.readOnly ? ' · read-only' : ''} · <Time at={b.updatedAt} />
        </p>
        <label htmlFor={`${id}-content`}>
          Text of {b.name} ({content.length}/{b.limitChars} characters)
        </label>
        <textarea
          id={`${id}-content`}
          rows={5}
          value={content}
          onChange={(e) => setContent(e.target.value)}
        />
        <label className="checkbox">
          <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.target.checked)} />{' '}
          Read-only (the agent cannot edit {b.name})
        </label>
        <div className="form-actions">
          <button
            type="button"
            className="primary"
            disabled={!dirty || save.isPending}
            onClick={() => save.mutate()}
          >
            Save {b.name}
          </button>
          <button type="button" onClick={() => setShowVersions((v) => !v)} aria-expanded={showVersions}>
            Versions of {b.name}
          </button>
          <button
            type="button"
            className="danger"
            disabled={remove.isPending}
            onClick={() => remove.mutate()}
          >
            Delete {b.name}
          </button>
        </div>
        {save.isError ? <ErrorBox error={save.error} /> : null}
        {remove.isError ? <ErrorBox error={remove.error} /> : null}
        {showVersions ? <Versions agentId={agentId} name={b.name} version={b.version} /> : null}
      </section>
    </li>
  );
}

function Versions({ agentId, name, version }: { agentId: string; name: string; version: number }) {
  const api = useApi();
  const versions = useQuery({
    queryKey: ['blocks', agentId, name, 'versions', version],
    queryFn: () =>
      unwrap(
        api.GET('/v1/agents/{id}/blocks/{name}/versions', {
          params: { path: { id: agentId, name }, query: { limit: 50 } },
        }),
      ),
  });
  if (versions.isPending) return <Loading what="Loading versions" />;
  if (versions.isError) return <ErrorBox error={versions.error} />;
  return (
    <ol className="plain-list" aria-label={`Versions of ${name}`}>
      {versions.data.data.map((v) => (
        <li key={v.version} data-testid="block-version">
          <span className="small muted">
            version {v.version} · {v.writtenBy}
            {v.turnId ? ` · turn ${v.turnId}` : ''} · <Time at={v.createdAt} />
          </span>
          <p className="memory-text">{v.content}</p>
        </li>
      ))}
    </ol>
  );
}

function NewBlock({ agentId }: { agentId: string }) {
  const api = useApi();
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [limit, setLimit] = useState('2000');
  const [content, setContent] = useState('');
  const [readOnly, setReadOnly] = useState(false);
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.PUT('/v1/agents/{id}/blocks/{name}', {
          params: { path: { id: agentId, name: name.trim() } },
          body: {
            content,
            readOnly,
            limitChars: Number(limit),
            expectedVersion: 0,
            ...(description.trim() ? { description: description.trim() } : {}),
          },
        }),
      ),
    onSuccess: () => {
      setName('');
      setDescription('');
      setContent('');
      setReadOnly(false);
      return queries.invalidateQueries({ queryKey: ['blocks', agentId], exact: true });
    },
  });
  return (
    <form
      className="panel form"
      aria-label="New memory block"
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <h2>New memory block</h2>
      <label htmlFor="block-new-name">Block name</label>
      <input id="block-new-name" value={name} onChange={(e) => setName(e.target.value)} />
      <label htmlFor="block-new-description">Description (optional)</label>
      <input
        id="block-new-description"
        value={description}
        onChange={(e) => setDescription(e.target.value)}
      />
      <label htmlFor="block-new-limit">Limit (characters)</label>
      <input
        id="block-new-limit"
        type="number"
        min={1}
        max={8000}
        value={limit}
        onChange={(e) => setLimit(e.target.value)}
      />
      <label htmlFor="block-new-content">Block text</label>
      <textarea
        id="block-new-content"
        rows={4}
        value={content}
        onChange={(e) => setContent(e.target.value)}
      />
      <label className="checkbox">
        <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.target.checked)} /> Read-only
      </label>
      <div className="form-actions">
        <button type="submit" className="primary" disabled={create.isPending}>
          Create block
        </button>
      </div>
      {create.isError ? <ErrorBox error={create.error} /> : null}
    </form>
  );
}
