import type { components } from '@switchboard/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Time } from '../../components/ui';

type Version = components['schemas']['AgentVersion'];

/** A value of a version's configuration as text: strings as written, anything else as JSON. */
const shown = (v: unknown) => (v === null ? '—' : typeof v === 'string' ? v : JSON.stringify(v));

/**
 * The agent's configuration versions (docs/adr/0061), newest first: pick two to see what changed
 * between them field by field, and roll back to any one (a new version equal to it). Values are the
 * tenant's own text, shown as text, never as markup.
 */
export function AgentVersions({ agentId, latest }: { agentId: string; latest: number }) {
  const api = useApi();
  const queries = useQueryClient();
  const versions = useQuery({
    queryKey: ['agent-versions', agentId, latest],
    queryFn: () =>
      unwrap(
        api.GET('/v1/agents/{id}/versions', { params: { path: { id: agentId }, query: { limit: 200 } } }),
      ),
  });
  const [from, setFrom] = useState<number | null>(null);
  const [to, setTo] = useState<number | null>(null);
  const list: Version[] = versions.data?.data ?? [];
  // Versions are only ever added: the newest listed is the agent's current one.
  const current = list[0]?.version;
  const a = from ?? list[1]?.version ?? list[0]?.version ?? 1;
  const b = to ?? list[0]?.version ?? 1;
  const diff = useQuery({
    queryKey: ['agent-version-diff', agentId, a, b],
    enabled: list.length > 0,
    queryFn: () =>
      unwrap(
        api.GET('/v1/agents/{id}/versions/diff', {
          params: { path: { id: agentId }, query: { from: a, to: b } },
        }),
      ),
  });
  const rollback = useMutation({
    mutationFn: (version: number) =>
      unwrap(
        api.POST('/v1/agents/{id}/rollback', {
          params: { path: { id: agentId } },
          body: { version, note: `rollback to version ${version} (console)` },
        }),
      ),
    onSuccess: () => {
      setFrom(null);
      setTo(null);
      void queries.invalidateQueries({ queryKey: ['agent-versions', agentId] });
      return queries.invalidateQueries({ queryKey: ['agent', agentId] });
    },
  });
  if (versions.isPending) return <Loading what="Loading the versions" />;
  if (versions.isError) return <ErrorBox error={versions.error} />;
  return (
    <div className="grid">
      <section className="panel" aria-labelledby="versions-h">
        <h2 id="versions-h">Versions</h2>
        <div className="table-scroll">
          <table aria-label="Agent versions">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Created</th>
                <th scope="col">By</th>
                <th scope="col">Note</th>
                <th scope="col">Action</th>
              </tr>
            </thead>
            <tbody>
              {list.map((v) => (
                <tr key={v.version} data-testid="agent-version">
                  <td>
                    v{v.version}
                    {v.version === current ? ' (current)' : ''}
                  </td>
                  <td>
                    <Time at={v.createdAt} />
                  </td>
                  <td className="mono">{v.createdBy ?? <span className="muted">system</span>}</td>
                  <td>{v.note ?? <span className="muted">—</span>}</td>
                  <td>
                    {v.version !== current ? (
                      <button
                        type="button"
                        disabled={rollback.isPending}
                        onClick={() => rollback.mutate(v.version)}
                        aria-label={`Roll back to version ${v.version}`}
                      >
                        Roll back
                      </button>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {rollback.isError ? <ErrorBox error={rollback.error} /> : null}
      </section>
      <section className="panel" aria-labelledby="diff-h">
        <h2 id="diff-h">Compare</h2>
        <div className="form-actions">
          <label htmlFor="diff-from">From version</label>
          <select id="diff-from" value={a} onChange={(e) => setFrom(Number(e.target.value))}>
            {list.map((v) => (
              <option key={v.version} value={v.version}>
                v{v.version}
              </option>
            ))}
          </select>
          <label htmlFor="diff-to">To version</label>
          <select id="diff-to" value={b} onChange={(e) => setTo(Number(e.target.value))}>
            {list.map((v) => (
              <option key={v.version} value={v.version}>
                v{v.version}
              </option>
            ))}
          </select>
        </div>
        {diff.isPending ? (
          <Loading what="Comparing" />
        ) : diff.isError ? (
          <ErrorBox error={diff.error} />
        ) : diff.data.changes.length === 0 ? (
          <p className="empty" data-testid="version-diff-empty">
            v{a} and v{b} are the same.
          </p>
        ) : (
          <table aria-label="Version diff" data-testid="version-diff">
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">v{a}</th>
                <th scope="col">v{b}</th>
              </tr>
            </thead>
            <tbody>
              {diff.data.changes.map((c) => (
                <tr key={c.path}>
                  <td className="mono">{c.path}</td>
                  <td className="memory-text">{shown(c.before)}</td>
                  <td className="memory-text">{shown(c.after)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
