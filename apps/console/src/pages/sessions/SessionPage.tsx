import {
  keepPreviousData,
  useInfiniteQuery,
  useMutation,
  useQuery,
  useQueryClient,
} from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import type { components } from '@switchboard/client';
import { unwrap, useApi } from '../../api';
import { Markdown } from '../../components/Markdown';
import { ErrorBox, Json, Loading, Money, Page, StatusBadge, Time } from '../../components/ui';
import { isEnded, turnText, type StreamTurn } from '../../lib/session-stream';
import { shortId } from './ids';
import { Lineage } from './Lineage';
import { SessionTurns, useSessionTurns } from './SessionTurns';
import { TurnActions } from './TurnActions';
import { useAgents } from './useAgents';
import './sessions.css';
import { useSessionStream, type Connection } from './useSessionStream';

type Message = components['schemas']['Message'];
type Admit = components['schemas']['AdmitMessageDto'];

/**
 * One session: the live turn (its status and the text as the model streams it), the transcript with
 * each entry's provenance, and a composer to send, interject, interrupt or cancel.
 */
export default function SessionPage() {
  const { id = '' } = useParams();
  const api = useApi();
  const agents = useAgents();
  const session = useQuery({
    queryKey: ['session', id],
    queryFn: () => unwrap(api.GET('/v1/sessions/{id}', { params: { path: { id } } })),
    refetchInterval: 5_000,
  });
  const { stream, connection, error } = useSessionStream(id);
  const transcript = useTranscript(id, stream.transcriptVersion);
  const turns = useSessionTurns(id, stream.transcriptVersion);
  const current = stream.current();
  const agentName = agents.data?.data.find((a) => a.id === session.data?.agentId)?.name;

  if (session.error) return <Page title="Session">{<ErrorBox error={session.error} />}</Page>;
  if (!session.data) return <Loading what="Loading the session" />;
  const s = session.data;
  return (
    <Page
      title={s.title || `Session ${shortId(s.id)}`}
      actions={
        <>
          <StatusBadge status={s.status} />
          <Link to="/sessions">All sessions</Link>
        </>
      }
    >
      <p className="muted small">
        Agent {agentName ?? s.agentId} · cost <Money usd={s.usage.costUsd} /> · {s.usage.inputTokens} in /{' '}
        {s.usage.outputTokens} out tokens · started <Time at={s.createdAt} />
      </p>
      {s.overrides && (s.overrides.model || s.overrides.instructions) ? (
        <p className="notice" data-testid="session-overrides">
          This session runs with its own{' '}
          {[
            s.overrides.model ? `model ${s.overrides.model}` : null,
            s.overrides.instructions ? 'instructions' : null,
          ]
            .filter(Boolean)
            .join(' and ')}{' '}
          over the agent&apos;s.
        </p>
      ) : null}
      <LiveTurn turn={current} connection={connection} error={error} />
      <Composer sessionId={id} closed={s.status === 'closed'} />
      <Lineage sessionId={id} version={stream.transcriptVersion} />
      <SessionTurns
        turns={turns.data?.pages.flatMap((p) => p.data) ?? []}
        error={turns.error}
        pending={turns.isPending}
        actions={(t) => (
          <TurnActions
            sessionId={id}
            turnId={t.id}
            seq={t.seq}
            ended={isEnded(t.status)}
            rewound={t.rewoundAt !== null}
          />
        )}
      />
      <h2 className="section-title">Transcript</h2>
      {transcript.error ? <ErrorBox error={transcript.error} /> : null}
      {transcript.isPending ? (
        <Loading what="Loading the transcript" />
      ) : (
        <Transcript messages={transcript.data?.pages.flatMap((p) => p.data) ?? []} />
      )}
    </Page>
  );
}

/**
 * The transcript, every page (GET /v1/sessions/:id/messages is paged forward by cursor, oldest
 * first: the pages are read to the end). Read again whenever the stream journals something that adds
 * to it (an admission, an approval asked, a turn's end).
 */
function useTranscript(sessionId: string, version: number) {
  const api = useApi();
  const q = useInfiniteQuery({
    // The stream's count of transcript changes is part of the key: each change reads the transcript
    // afresh (the previous one stays on screen meanwhile) rather than racing an invalidation against
    // a read still in flight.
    queryKey: ['messages', sessionId, version],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam, signal }) =>
      unwrap(
        api.GET('/v1/sessions/{id}/messages', {
          params: {
            path: { id: sessionId },
            query: { limit: 200, ...(pageParam ? { cursor: pageParam } : {}) },
          },
          signal,
        }),
      ),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
  });
  const { hasNextPage, isFetchingNextPage, isPlaceholderData, fetchNextPage } = q;
  useEffect(() => {
    if (hasNextPage && !isFetchingNextPage && !isPlaceholderData) void fetchNextPage();
  }, [hasNextPage, isFetchingNextPage, isPlaceholderData, fetchNextPage]);
  return q;
}

const CONNECTION_TEXT: Record<Connection, string> = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  failed: 'stream unavailable',
};

/** The newest turn: status, what runs now, its text as it streams, and Cancel while it runs. */
function LiveTurn({
  turn,
  connection,
  error,
}: {
  turn: StreamTurn | undefined;
  connection: Connection;
  error: string | null;
}) {
  const api = useApi();
  const cancel = useMutation({
    mutationFn: (turnId: string) =>
      unwrap(
        api.POST('/v1/turns/{id}/cancel', {
          params: { path: { id: turnId } },
          body: { reason: 'cancelled from the console' },
        }),
      ),
  });
  const running = turn !== undefined && !isEnded(turn.status);
  return (
    <section className="panel live-turn" aria-label="Current turn">
      <div className="live-head">
        <strong>Current turn</strong>
        {turn ? (
          <>
            <span data-testid="turn-status">
              <StatusBadge status={turn.status} />
            </span>
            <Link to={`/turns/${turn.turnId}`}>Turn {shortId(turn.turnId)}</Link>
            {turn.runningTool ? <span className="muted small">running {turn.runningTool}</span> : null}
          </>
        ) : (
          <span className="muted">none yet</span>
        )}
        <span className="muted small live-connection" role="status">
          stream {CONNECTION_TEXT[connection]}
        </span>
        {running ? (
          <button
            type="button"
            className="danger"
            disabled={cancel.isPending}
            onClick={() => cancel.mutate(turn.turnId)}
          >
            Cancel turn
          </button>
        ) : null}
      </div>
      {error ? <p className="error">{error}</p> : null}
      {cancel.error ? <ErrorBox error={cancel.error} /> : null}
      {/* Plain text as it streams (cheap at hundreds of deltas a second); Markdown in the transcript. */}
      <div className="live-text" data-testid="live-text" aria-live="off" aria-busy={running}>
        {turn ? turnText(turn) : ''}
      </div>
    </section>
  );
}

/** Send a message; or interject it into the running turn, or interrupt that turn with it. */
function Composer({ sessionId, closed }: { sessionId: string; closed: boolean }) {
  const api = useApi();
  const queries = useQueryClient();
  const [text, setText] = useState('');
  const send = useMutation({
    mutationFn: (o: Pick<Admit, 'priority' | 'multitask'>) =>
      unwrap(
        api.POST('/v1/sessions/{id}/messages', {
          params: { path: { id: sessionId } },
          body: { content: text, ...o },
        }),
      ),
    onSuccess: () => {
      setText('');
      void queries.invalidateQueries({ queryKey: ['messages', sessionId] });
    },
  });
  const empty = text.trim().length === 0;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!empty) send.mutate({});
  };
  return (
    <form className="panel composer" onSubmit={submit} aria-label="Composer">
      <label htmlFor="composer-text">Message</label>
      <textarea
        id="composer-text"
        rows={3}
        value={text}
        disabled={closed}
        onChange={(e) => setText(e.target.value)}
        placeholder={closed ? 'This session is closed.' : 'Write to the agent…'}
      />
      <div className="actions">
        <button type="submit" className="primary" disabled={closed || empty || send.isPending}>
          Send
        </button>
        <button
          type="button"
          disabled={closed || empty || send.isPending}
          onClick={() => send.mutate({ priority: 'interject' })}
          title="Deliver into the running turn at its next step"
        >
          Interject
        </button>
        <button
          type="button"
          disabled={closed || empty || send.isPending}
          onClick={() => send.mutate({ multitask: 'interrupt' })}
          title="Cancel the running turn and run this message instead"
        >
          Interrupt
        </button>
      </div>
      {send.error ? <ErrorBox error={send.error} /> : null}
    </form>
  );
}

function Transcript({ messages }: { messages: Message[] }) {
  // Always rendered (an empty session too): a benchmark opens the page and waits for it.
  return (
    <ol className="transcript" data-testid="transcript" aria-label="Transcript">
      {messages.length === 0 ? <li className="empty">No messages yet.</li> : null}
      {messages.map((m, i) => (
        <Entry key={m.id} m={m} firstOfTurn={m.turnId !== null && m.turnId !== messages[i - 1]?.turnId} />
      ))}
    </ol>
  );
}

/** Who or what the entry came from (its origin), for the provenance line. */
function originText(o: Message['origin']): string {
  switch (o.kind) {
    case 'operator':
      return o.actorId ? `operator ${o.actorId}` : 'operator';
    case 'channel':
      return `channel ${o.channelId}`;
    case 'webhook':
      return `webhook ${o.source}${o.eventType ? ` (${o.eventType})` : ''}`;
    case 'callback':
      return `callback ${o.triggerId}`;
    case 'timer':
      return `schedule ${o.scheduleId}`;
    case 'system':
      return `system ${o.subsystem}`;
    case 'task':
      return `task ${o.taskId}`;
  }
}

function Entry({ m, firstOfTurn }: { m: Message; firstOfTurn: boolean }) {
  return (
    <li className={`entry entry-${m.role}`} data-testid={`message-${m.id}`}>
      <div className="entry-head small">
        <strong>{m.role}</strong>
        <span className="badge" title="kind">
          {m.kind.replaceAll('_', ' ')}
        </span>
        <span className="badge" title="authority class">
          {m.authorityClass.replaceAll('_', ' ')}
        </span>
        <span className="muted" title="trust">
          {m.trust.replaceAll('_', ' ')}
        </span>
        <span className="muted">from {originText(m.origin)}</span>
        {m.priority !== 'normal' ? <span className="muted">priority {m.priority}</span> : null}
        <Time at={m.createdAt} />
        {m.turnId && firstOfTurn ? <Link to={`/turns/${m.turnId}`}>Turn {shortId(m.turnId)}</Link> : null}
      </div>
      <Body m={m} />
      {m.toolCalls.map((c) => (
        <div key={c.id} className="tool-call">
          <span className="small">
            Tool call <strong>{c.name}</strong> <span className="muted mono">{c.id}</span>
          </span>
          <Json value={parseArguments(c.arguments)} label={`Arguments of ${c.name}`} />
        </div>
      ))}
    </li>
  );
}

function Body({ m }: { m: Message }) {
  const b = m.body;
  if (m.role === 'tool') {
    return (
      <div className="tool-result">
        <span className="small">
          Result of <span className="mono">{m.toolCallId ?? 'a call'}</span>
        </span>
        <Json value={b.type === 'json' ? b.value : b.text} label="Tool result" />
      </div>
    );
  }
  if (b.type === 'json') return <Json value={b.value} label="Message body" />;
  const text = b.type === 'brief' && b.title ? `${b.title}\n\n${b.text}` : b.text;
  if (!text) return null;
  // Model text as sanitised Markdown; what people and systems sent, as the plain text it is.
  return m.role === 'assistant' ? <Markdown text={text} /> : <p className="plain">{text}</p>;
}

function parseArguments(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}
