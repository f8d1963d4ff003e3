import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox } from '../../components/ui';

/** What a fork or a replay may change: another model, other instructions (both optional). */
interface Overrides {
  model: string;
  instructions: string;
}

const trimmed = (o: Overrides) => ({
  ...(o.model.trim() ? { model: o.model.trim() } : {}),
  ...(o.instructions.trim() ? { instructions: o.instructions } : {}),
});

type Open = 'fork' | 'replay' | null;

/**
 * A turn's time-travel actions (docs/adr/0053, 0054): fork the session here (a new session with the
 * transcript through this turn, optionally on another model or instructions), rewind the session to
 * before this turn (it and every later turn are left out of the model's history, kept in the
 * journal), and replay the turn (run again in a fork taken just before it; a side effect is never
 * repeated: a recorded one is answered from its result, any other waits for an approval).
 */
export function TurnActions({
  sessionId,
  turnId,
  seq,
  ended,
  rewound,
}: {
  sessionId: string;
  turnId: string;
  seq: number;
  ended: boolean;
  rewound: boolean;
}) {
  const api = useApi();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [open, setOpen] = useState<Open>(null);
  const fork = useMutation({
    mutationFn: (o: Overrides) =>
      unwrap(
        api.POST('/v1/sessions/{id}/fork', {
          params: { path: { id: sessionId } },
          body: { turnId, ...trimmed(o) },
        }),
      ),
    onSuccess: (r) => void navigate(`/sessions/${r.session.id}`),
  });
  const replay = useMutation({
    mutationFn: (o: Overrides) =>
      unwrap(api.POST('/v1/turns/{id}/replay', { params: { path: { id: turnId } }, body: trimmed(o) })),
    onSuccess: (r) => void navigate(`/turns/${r.replay.turnId}`),
  });
  const rewind = useMutation({
    mutationFn: () =>
      unwrap(api.POST('/v1/sessions/{id}/rewind', { params: { path: { id: sessionId } }, body: { turnId } })),
    onSuccess: () => {
      void queries.invalidateQueries({ queryKey: ['session-turns', sessionId] });
      void queries.invalidateQueries({ queryKey: ['messages', sessionId] });
      void queries.invalidateQueries({ queryKey: ['session', sessionId] });
    },
  });
  const onRewind = () => {
    if (
      window.confirm(`Rewind the session to before turn #${seq}? It and every later turn leave the history.`)
    )
      rewind.mutate();
  };
  const why = ended ? undefined : 'Only a turn that has ended';
  return (
    <div className="turn-actions">
      <div className="actions">
        <button
          type="button"
          disabled={!ended}
          title={why}
          onClick={() => setOpen(open === 'fork' ? null : 'fork')}
        >
          Fork here
        </button>
        <button type="button" disabled={rewound || rewind.isPending} onClick={onRewind}>
          Rewind to here
        </button>
        <button
          type="button"
          disabled={!ended}
          title={why}
          onClick={() => setOpen(open === 'replay' ? null : 'replay')}
        >
          Replay
        </button>
      </div>
      {open === 'fork' ? (
        <OverridesForm
          label={`Fork after turn #${seq}`}
          submit="Create the fork"
          pending={fork.isPending}
          onSubmit={(o) => fork.mutate(o)}
        />
      ) : null}
      {open === 'replay' ? (
        <OverridesForm
          label={`Replay turn #${seq}`}
          submit="Run the replay"
          pending={replay.isPending}
          onSubmit={(o) => replay.mutate(o)}
        />
      ) : null}
      {fork.error ? <ErrorBox error={fork.error} /> : null}
      {replay.error ? <ErrorBox error={replay.error} /> : null}
      {rewind.error ? <ErrorBox error={rewind.error} /> : null}
    </div>
  );
}

function OverridesForm({
  label,
  submit,
  pending,
  onSubmit,
}: {
  label: string;
  submit: string;
  pending: boolean;
  onSubmit: (o: Overrides) => void;
}) {
  const id = useId();
  const [model, setModel] = useState('');
  const [instructions, setInstructions] = useState('');
  const send = (e: FormEvent) => {
    e.preventDefault();
    onSubmit({ model, instructions });
  };
  return (
    <form className="overrides" aria-label={label} onSubmit={send}>
      <label htmlFor={`${id}-model`}>Model (optional)</label>
      <input
        id={`${id}-model`}
        value={model}
        onChange={(e) => setModel(e.target.value)}
        placeholder="the agent's model"
      />
      <label htmlFor={`${id}-instructions`}>Instructions (optional)</label>
      <textarea
        id={`${id}-instructions`}
        rows={3}
        value={instructions}
        onChange={(e) => setInstructions(e.target.value)}
        placeholder="the agent's instructions"
      />
      <button type="submit" className="primary" disabled={pending}>
        {submit}
      </button>
    </form>
  );
}
