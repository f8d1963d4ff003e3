import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Page, StatusBadge, Time } from '../../components/ui';
import { embeddingProgress } from '../../lib/memory-search';
import { AgentEvaluation } from './AgentEvaluation';
import { AgentVersions } from './AgentVersions';
import { AgentCanary } from './AgentCanary';
import { MemoryBlocks } from './MemoryBlocks';
import { MemoryBrowser } from './MemoryBrowser';
import { useAgent, type AgentDetail } from './queries';
import { WorkItemsBoard } from './WorkItemsBoard';
import './agents.css';

const TABS = [
  ['settings', 'Settings'],
  ['lifecycle', 'Lifecycle'],
  ['work', 'Work items'],
  ['memory', 'Memory'],
  ['blocks', 'Memory blocks'],
  ['versions', 'Versions'],
  ['evaluation', 'Evaluation'],
] as const;
type Tab = (typeof TABS)[number][0];

/** /agents/:id: the agent's settings, lifecycle and learning, its work items, memory, memory blocks, versions and scores. */
export default function AgentPage() {
  const { id = '' } = useParams();
  // Lifecycle changes on its own (a turn starts, the agent sleeps): refreshed while the page is open.
  const agent = useAgent(id, { refetchInterval: 3000 });
  const [tab, setTab] = useState<Tab>('settings');
  if (agent.isPending) return <Loading what="Loading the agent" />;
  if (agent.isError) return <ErrorBox error={agent.error} />;
  const a = agent.data;
  return (
    <Page
      title={a.name}
      actions={
        <>
          <span className="self-center">
            <StatusBadge status={a.status.lifecycle.state} />
          </span>
          <Link className="button" to={`/agents/${a.id}/edit`}>
            Edit
          </Link>
        </>
      }
    >
      <EmbeddingProgress agentId={a.id} embedder={a.embedder} />
      <div className="tabs" role="tablist" aria-label="Agent sections">
        {TABS.map(([key, label]) => (
          <button
            key={key}
            type="button"
            role="tab"
            id={`tab-${key}`}
            aria-selected={tab === key}
            aria-controls={`panel-${key}`}
            onClick={() => setTab(key)}
          >
            {label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`}>
        {tab === 'settings' ? <Settings agent={a} /> : null}
        {tab === 'lifecycle' ? <Lifecycle agent={a} /> : null}
        {tab === 'work' ? <WorkItemsBoard agentId={a.id} /> : null}
        {tab === 'memory' ? <MemoryBrowser agentId={a.id} /> : null}
        {tab === 'blocks' ? <MemoryBlocks agentId={a.id} /> : null}
        {tab === 'versions' ? (
          <>
            <AgentCanary agentId={a.id} canary={a.canary} />
            <AgentVersions agentId={a.id} latest={a.version} />
          </>
        ) : null}
        {tab === 'evaluation' ? (
          <AgentEvaluation agentId={a.id} scorers={a.scorers.map((s) => s.name)} />
        ) : null}
      </div>
    </Page>
  );
}

/**
 * The re-embedding of the agent's memory (docs/adr/0050) as a progress bar while its embedder's
 * set is incomplete; polled until complete, then nothing is shown.
 */
function EmbeddingProgress({ agentId, embedder }: { agentId: string; embedder: string | null }) {
  const api = useApi();
  const status = useQuery({
    queryKey: ['memory-embeddings', agentId, embedder],
    enabled: embedder !== null,
    queryFn: () =>
      unwrap(api.GET('/v1/agents/{id}/memory/embeddings', { params: { path: { id: agentId } } })),
    refetchInterval: (q) => (q.state.data?.complete ? false : 1000),
  });
  const progress = embeddingProgress(status.data);
  if (!progress) return null;
  return (
    <div className="panel" data-testid="embedding-progress">
      <label htmlFor={`embedding-${agentId}`}>{progress.text}</label>
      <progress id={`embedding-${agentId}`} max={100} value={progress.percent}>
        {progress.percent}%
      </progress>
    </div>
  );
}

const list = (xs: string[]) => (xs.length ? xs.join(', ') : <span className="muted">none</span>);

function Settings({ agent: a }: { agent: AgentDetail }) {
  const budgets = Object.entries(a.budgets);
  const archivist = Object.entries(a.archivist);
  return (
    <div className="grid">
      <section className="panel" aria-labelledby="settings-h">
        <h2 id="settings-h">Settings</h2>
        <dl className="summary" data-testid="agent-settings">
          <dt>Archetype / tier</dt>
          <dd>
            {a.archetype} / {a.tier}
            {a.builtIn ? ' (built in)' : ''}
          </dd>
          <dt>Model</dt>
          <dd className="mono">{a.model}</dd>
          <dt>Fallback models</dt>
          <dd className="mono">{list(a.fallbackModels)}</dd>
          <dt>Tools</dt>
          <dd className="mono">{list(a.tools)}</dd>
          <dt>Need approval</dt>
          <dd className="mono">{list(a.approvalRequired)}</dd>
          <dt>Sub-agents</dt>
          <dd className="mono">{list(a.allowedSubagents)}</dd>
          <dt>Budgets</dt>
          <dd>{budgets.length ? budgets.map(([k, v]) => `${k} ${v}`).join(', ') : 'defaults'}</dd>
          <dt>Compression</dt>
          <dd>{a.toolResultCompression}</dd>
          <dt>Embedder</dt>
          <dd className="mono">
            {a.embedder ?? <span className="muted">none (tool selection: local/words-100d)</span>}
          </dd>
          <dt>Tool selection</dt>
          <dd>
            {a.toolSelection.maxPerTurn !== undefined
              ? `at most ${a.toolSelection.maxPerTurn} tools a turn` +
                (a.toolSelection.pinned?.length ? `, pinned: ${a.toolSelection.pinned.join(', ')}` : '')
              : 'every tool'}
          </dd>
          <dt>Archivist</dt>
          <dd>{archivist.length ? archivist.map(([k, v]) => `${k} ${v}`).join(', ') : "the tenant's"}</dd>
          <dt>Updated</dt>
          <dd>
            <Time at={a.updatedAt} />
          </dd>
        </dl>
      </section>
      <section className="panel" aria-labelledby="instructions-h">
        <h2 id="instructions-h">Instructions</h2>
        {/* The tenant's own text, shown as written (plain text, never markup). */}
        <p className="memory-text" data-testid="agent-instructions">
          {a.instructions || <span className="muted">none</span>}
        </p>
      </section>
    </div>
  );
}

function Lifecycle({ agent: a }: { agent: AgentDetail }) {
  const api = useApi();
  const queries = useQueryClient();
  const [reason, setReason] = useState('');
  const l = a.status.lifecycle;
  const act = useMutation({
    mutationFn: (action: 'pause' | 'resume' | 'stop') => {
      const path = { params: { path: { id: a.id } } };
      const body = reason.trim() ? { reason: reason.trim() } : {};
      if (action === 'pause') return unwrap(api.POST('/v1/agents/{id}/pause', { ...path, body }));
      if (action === 'stop') return unwrap(api.POST('/v1/agents/{id}/stop', { ...path, body }));
      return unwrap(api.POST('/v1/agents/{id}/resume', path));
    },
    onSuccess: () => {
      setReason('');
      // The list shows the lifecycle too.
      void queries.invalidateQueries({ queryKey: ['agents'] });
      return queries.invalidateQueries({ queryKey: ['agent', a.id] });
    },
  });
  const held = l.state === 'paused' || l.state === 'stopped';
  return (
    <div className="grid">
      <section className="panel" aria-labelledby="lifecycle-h">
        <h2 id="lifecycle-h">Lifecycle</h2>
        <dl className="summary">
          <dt>State</dt>
          <dd data-testid="lifecycle-state">
            <StatusBadge status={l.state} />
          </dd>
          <dt>Why</dt>
          <dd>{l.why}</dd>
          <dt>Since</dt>
          <dd>
            <Time at={l.since} />
          </dd>
          {l.until ? (
            <>
              <dt>{l.state === 'asleep' ? 'Asleep until' : 'Until'}</dt>
              <dd>
                <time dateTime={l.until}>{new Date(l.until).toLocaleString()}</time>
              </dd>
            </>
          ) : null}
          {l.hint ? (
            <>
              <dt>Hint</dt>
              <dd>{l.hint}</dd>
            </>
          ) : null}
          {l.currentWorkItemId ? (
            <>
              <dt>Current work item</dt>
              <dd className="mono">{l.currentWorkItemId}</dd>
            </>
          ) : null}
        </dl>
        <label htmlFor="posture-reason">Reason (optional)</label>
        <input id="posture-reason" value={reason} onChange={(e) => setReason(e.target.value)} />
        <div className="form-actions">
          {held ? (
            <button
              type="button"
              className="primary"
              disabled={act.isPending}
              onClick={() => act.mutate('resume')}
            >
              Resume
            </button>
          ) : (
            <button type="button" disabled={act.isPending} onClick={() => act.mutate('pause')}>
              Pause
            </button>
          )}
          {l.state !== 'stopped' ? (
            <button
              type="button"
              className="danger"
              disabled={act.isPending}
              onClick={() => act.mutate('stop')}
            >
              Stop
            </button>
          ) : null}
        </div>
        <p className="hint">
          Pause: messages still queue, nothing new starts. Stop: every admission is refused until resumed.
        </p>
        {act.isError ? <ErrorBox error={act.error} /> : null}
      </section>
      <section className="panel" aria-labelledby="learning-h">
        <h2 id="learning-h">Learning: tool statistics</h2>
        <ToolStats agent={a} />
      </section>
    </div>
  );
}

/** What the agent has learned about its tools: calls, failures by kind, latency. */
function ToolStats({ agent: a }: { agent: AgentDetail }) {
  const tools = a.status.tools;
  if (tools.length === 0) return <p className="empty">No tool calls recorded yet.</p>;
  return (
    <div className="table-scroll">
      <table aria-label="Tool statistics">
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Calls</th>
            <th scope="col">Failure rate</th>
            <th scope="col">Avg latency</th>
            <th scope="col">Last failure</th>
            <th scope="col">Last used</th>
          </tr>
        </thead>
        <tbody>
          {tools.map((t) => (
            <tr key={t.tool}>
              <td className="mono">{t.tool}</td>
              <td>{t.calls}</td>
              <td>{(t.failureRate * 100).toFixed(0)}%</td>
              <td>{Math.round(t.avgLatencyMs)} ms</td>
              <td>{t.lastFailureKind ?? <span className="muted">—</span>}</td>
              <td>
                <Time at={t.lastUsedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
