import type { components } from '@switchboard/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, Page } from '../../components/ui';
import {
  BUDGET_FIELDS,
  createBody,
  emptyFields,
  fieldsOf,
  issuesByField,
  patchBody,
  SUGGESTED_EMBEDDERS,
  type AgentFields,
  type BudgetField,
  type Issue,
} from '../../lib/agent-form';
import { ApiError, describeError } from '../../lib/errors';
import { useAgent } from './queries';
import './agents.css';

type CreateAgent = components['schemas']['CreateAgentDto'];
type UpdateAgent = components['schemas']['UpdateAgentDto'];

const BUDGET_LABELS: Record<BudgetField, string> = {
  maxIterations: 'Max model rounds per turn',
  maxToolCalls: 'Max tool calls per turn',
  maxUsd: 'Max spend per turn (USD)',
  deadlineMs: 'Deadline per turn (ms)',
  maxReflections: 'Max reflections per turn',
};

/** /agents/new and /agents/:id/edit: one form; the API validates, its issues show by their fields. */
export default function AgentEditPage() {
  const { id } = useParams();
  const agent = useAgent(id);
  if (!id) return <AgentForm />;
  if (agent.isPending) return <Loading what="Loading the agent" />;
  if (agent.isError) return <ErrorBox error={agent.error} />;
  return <AgentForm id={id} initial={fieldsOf(agent.data)} name={agent.data.name} />;
}

function AgentForm({ id, initial, name }: { id?: string; initial?: AgentFields; name?: string }) {
  const api = useApi();
  const queries = useQueryClient();
  const navigate = useNavigate();
  const [fields, setFieldsState] = useState<AgentFields>(initial ?? emptyFields());
  const archetypes = useQuery({
    queryKey: ['archetypes'],
    queryFn: () => unwrap(api.GET('/v1/archetypes')),
  });
  const save = useMutation({
    mutationFn: async () => {
      if (id) {
        const body = patchBody(initial ?? emptyFields(), fields) as UpdateAgent;
        return unwrap(api.PATCH('/v1/agents/{id}', { params: { path: { id } }, body }));
      }
      return unwrap(api.POST('/v1/agents', { body: createBody(fields) as CreateAgent }));
    },
    onSuccess: async (saved) => {
      await queries.invalidateQueries({ queryKey: ['agents'] });
      await queries.invalidateQueries({ queryKey: ['agent', saved.id] });
      void navigate(`/agents/${saved.id}`);
    },
  });
  // An edit after a refused save clears the refusal: what is shown is about what would be sent.
  const setFields = (update: (f: AgentFields) => AgentFields) => {
    if (save.isError) save.reset();
    setFieldsState(update);
  };
  const error = save.error;
  const byField = error instanceof ApiError ? issuesByField(error.details) : new Map<string, Issue[]>();
  const set =
    <K extends keyof AgentFields>(key: K) =>
    (value: AgentFields[K]) =>
      setFields((f) => ({ ...f, [key]: value }));
  const setBudget = (key: BudgetField) => (value: string) =>
    setFields((f) => ({ ...f, budgets: { ...f.budgets, [key]: value } }));
  const knownTools = [...new Set((archetypes.data?.data ?? []).flatMap((a) => a.tools))].sort();
  const unchanged = Boolean(id && initial && Object.keys(patchBody(initial, fields)).length === 0);

  return (
    <Page title={id ? `Edit ${name ?? 'agent'}` : 'New agent'}>
      <form
        className="form"
        aria-label={id ? 'Edit agent' : 'New agent'}
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        {error ? (
          <div className="error" role="alert" data-testid="form-error">
            <p>Not saved: {describeError(error)}</p>
          </div>
        ) : null}
        <Field label="Name" issues={byField.get('name')}>
          {(p) => <input {...p} value={fields.name} onChange={(e) => set('name')(e.target.value)} />}
        </Field>
        <Field
          label="Archetype"
          issues={byField.get('archetype')}
          hint="Defaults for the agent's model, tools and instructions; blank: the API's default."
        >
          {(p) => (
            <select {...p} value={fields.archetype} onChange={(e) => set('archetype')(e.target.value)}>
              <option value="">(default)</option>
              {(archetypes.data?.data ?? []).map((a) => (
                <option key={a.name} value={a.name}>
                  {a.name} — {a.description}
                </option>
              ))}
              {fields.archetype && !archetypes.data?.data.some((a) => a.name === fields.archetype) ? (
                <option value={fields.archetype}>{fields.archetype}</option>
              ) : null}
            </select>
          )}
        </Field>
        <Field label="Tier" issues={byField.get('tier')}>
          {(p) => (
            <select {...p} value={fields.tier} onChange={(e) => set('tier')(e.target.value)}>
              <option value="">(the archetype's)</option>
              <option value="chat">chat</option>
              <option value="reasoning">reasoning</option>
              <option value="worker">worker</option>
            </select>
          )}
        </Field>
        <Field label="Instructions" issues={byField.get('instructions')}>
          {(p) => (
            <textarea
              {...p}
              rows={8}
              value={fields.instructions}
              onChange={(e) => set('instructions')(e.target.value)}
            />
          )}
        </Field>
        <Field
          label="Model"
          issues={byField.get('model')}
          hint='"<provider>/<model>" (openai, openai-chat, anthropic, scripted) or "hint:<route>"; blank: the default.'
        >
          {(p) => (
            <input
              {...p}
              className="mono"
              value={fields.model}
              onChange={(e) => set('model')(e.target.value)}
            />
          )}
        </Field>
        <ListField
          label="Fallback models"
          value={fields.fallbackModels}
          onChange={set('fallbackModels')}
          issues={byField.get('fallbackModels')}
          hint="Tried in order when the model fails; one per line, at most 5."
        />
        <ListField
          label="Tools"
          value={fields.tools}
          onChange={set('tools')}
          issues={byField.get('tools')}
          hint={
            knownTools.length > 0
              ? `One per line. Tools the archetypes use: ${knownTools.join(', ')}.`
              : 'One per line; an unknown name is refused.'
          }
        />
        <ListField
          label="Tools that need approval"
          value={fields.approvalRequired}
          onChange={set('approvalRequired')}
          issues={byField.get('approvalRequired')}
          hint="Calls of these tools wait for a human decision in the approvals inbox."
        />
        <ListField
          label="Allowed sub-agents"
          value={fields.allowedSubagents}
          onChange={set('allowedSubagents')}
          issues={byField.get('allowedSubagents')}
        />
        <fieldset>
          <legend>Budgets</legend>
          {BUDGET_FIELDS.map((key) => (
            <Field key={key} label={BUDGET_LABELS[key]} issues={byField.get(`budgets.${key}`)}>
              {(p) => (
                <input
                  {...p}
                  inputMode="decimal"
                  value={fields.budgets[key]}
                  onChange={(e) => setBudget(key)(e.target.value)}
                />
              )}
            </Field>
          ))}
        </fieldset>
        <fieldset>
          <legend>Compression and memory</legend>
          <Field
            label="Tool result compression"
            issues={byField.get('toolResultCompression')}
            hint="full: compacted by kind (original kept); light: lossless only; off; auto: light for hint:coding, else full."
          >
            {(p) => (
              <select
                {...p}
                value={fields.toolResultCompression}
                onChange={(e) => set('toolResultCompression')(e.target.value)}
              >
                <option value="">(default: auto)</option>
                <option value="auto">auto</option>
                <option value="full">full</option>
                <option value="light">light</option>
                <option value="off">off</option>
              </select>
            )}
          </Field>
          <Field label="Archivist mode" issues={byField.get('archivist.mode')}>
            {(p) => (
              <select
                {...p}
                value={fields.archivistMode}
                onChange={(e) => set('archivistMode')(e.target.value)}
              >
                <option value="">(the tenant's)</option>
                <option value="debounced">debounced</option>
                <option value="every_turn">every turn</option>
                <option value="off">off</option>
              </select>
            )}
          </Field>
          <Field label="Archivist: distil after turns" issues={byField.get('archivist.afterTurns')}>
            {(p) => (
              <input
                {...p}
                inputMode="numeric"
                value={fields.archivistAfterTurns}
                onChange={(e) => set('archivistAfterTurns')(e.target.value)}
              />
            )}
          </Field>
          <Field label="Archivist: distil after idle (ms)" issues={byField.get('archivist.idleMs')}>
            {(p) => (
              <input
                {...p}
                inputMode="numeric"
                value={fields.archivistIdleMs}
                onChange={(e) => set('archivistIdleMs')(e.target.value)}
              />
            )}
          </Field>
        </fieldset>
        <fieldset>
          <legend>Embeddings and tool selection</legend>
          <Field
            label="Embedder"
            issues={byField.get('embedder')}
            hint='"<provider>/<model>": local/words-100d or local/hash-256 (built in, free) or openai/<model> (billed per token). Set, memory records get vectors and hybrid recall; a change re-embeds them.'
          >
            {(p) => (
              <>
                <input
                  {...p}
                  className="mono"
                  list="embedder-suggestions"
                  value={fields.embedder}
                  onChange={(e) => set('embedder')(e.target.value)}
                />
                <datalist id="embedder-suggestions">
                  {SUGGESTED_EMBEDDERS.map((e) => (
                    <option key={e} value={e} />
                  ))}
                </datalist>
              </>
            )}
          </Field>
          <Field
            label="Tool selection: most tools per turn"
            issues={byField.get('toolSelection.maxPerTurn')}
            hint="With more tools than this, each turn is offered the pinned ones and those closest to its input; blank: every tool."
          >
            {(p) => (
              <input
                {...p}
                inputMode="numeric"
                value={fields.toolSelectionMaxPerTurn}
                onChange={(e) => set('toolSelectionMaxPerTurn')(e.target.value)}
              />
            )}
          </Field>
          <ListField
            label="Tool selection: pinned tools"
            value={fields.toolSelectionPinned}
            onChange={set('toolSelectionPinned')}
            issues={[...(byField.get('toolSelection.pinned') ?? []), ...(byField.get('toolSelection') ?? [])]}
            hint="Always offered; one per line."
          />
        </fieldset>
        {byField.get('')?.map((i) => (
          <p key={i.message} className="field-error">
            {i.message}
          </p>
        ))}
        <div className="form-actions">
          <button type="submit" className="primary" disabled={save.isPending || unchanged}>
            {save.isPending ? 'Saving…' : id ? 'Save changes' : 'Create agent'}
          </button>
          <Link className="button" to={id ? `/agents/${id}` : '/agents'}>
            Cancel
          </Link>
        </div>
      </form>
    </Page>
  );
}

interface ControlProps {
  id: string;
  'aria-invalid': boolean | undefined;
  'aria-describedby': string | undefined;
}

/** A labelled control with its hint and the API's issues for it, tied by aria-describedby. */
function Field({
  label,
  hint,
  issues,
  children,
}: {
  label: string;
  hint?: string;
  issues?: Issue[];
  children: (props: ControlProps) => ReactNode;
}) {
  const id = useId();
  const described = [hint ? `${id}-hint` : '', issues?.length ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        'aria-invalid': issues?.length ? true : undefined,
        'aria-describedby': described || undefined,
      })}
      {hint ? (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      {issues?.length ? (
        <div className="field-error" id={`${id}-error`} data-testid={`error-${label}`}>
          {issues.map((i) => (
            <p key={`${i.path}:${i.message}`} className="field-error">
              {i.message}
              {i.available ? ` (available: ${i.available.join(', ')})` : ''}
            </p>
          ))}
        </div>
      ) : null}
    </div>
  );
}

function ListField({
  label,
  value,
  onChange,
  issues,
  hint,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  issues?: Issue[];
  hint?: string;
}) {
  return (
    <Field label={label} issues={issues} hint={hint ?? 'One per line.'}>
      {(p) => (
        <textarea {...p} className="mono" rows={3} value={value} onChange={(e) => onChange(e.target.value)} />
      )}
    </Field>
  );
}
