import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { unwrap, useApi } from '../../api';
import { ErrorBox, Loading, StatusBadge, Time } from '../../components/ui';
import { apiErrorOf } from '../../lib/errors';
import { fieldText } from '../../lib/operator-form';
import { exportFileName, ExportReader, parseRetention, type ExportProgress } from '../../lib/tenant-data';
import type { EncryptionMode, OperatorTenant } from './admin';
import { SettingsForm, useTenantChanged } from './TenantSettingsForm';

/**
 * A tenant's data (docs/adr/0068, 0067, docs/TENANT-DATA.md): its export, its transcript retention,
 * its encryption mode and data keys, and its deletion.
 */
export function TenantDataPanels({ tenant }: { tenant: OperatorTenant }) {
  return (
    <>
      <div className="grid">
        <ExportPanel tenant={tenant} />
        <RetentionPanel tenant={tenant} />
      </div>
      <EncryptionPanel tenantId={tenant.id} />
      <DeletePanel tenant={tenant} />
    </>
  );
}

/**
 * Streams the archive (POST /v1/admin/tenants/:id/export), counting rows as they arrive, then hands
 * it to the browser as a file. Complete only with its `end` line; a cut stream is said to be cut.
 */
function ExportPanel({ tenant }: { tenant: OperatorTenant }) {
  const api = useApi();
  const [progress, setProgress] = useState<ExportProgress | null>(null);
  const run = useMutation({
    mutationFn: async () => {
      const { response, error } = await api.POST('/v1/admin/tenants/{id}/export', {
        params: { path: { id: tenant.id } },
        parseAs: 'stream',
      });
      if (!response.ok || !response.body)
        throw apiErrorOf(response.status, error ?? (await jsonOf(response)));
      const reader = new ExportReader();
      const decoder = new TextDecoder();
      const parts: Uint8Array[] = [];
      const stream = response.body.getReader();
      for (;;) {
        const { done, value } = await stream.read();
        if (done) break;
        parts.push(value);
        setProgress({ ...reader.feed(decoder.decode(value, { stream: true })) });
      }
      const last = reader.feed(decoder.decode());
      reader.finish();
      setProgress({ ...last });
      if (!last.end) {
        throw new Error(
          `The export stopped after ${last.rows} rows, before its end line; nothing was saved. Try again.`,
        );
      }
      const url = URL.createObjectURL(new Blob(parts as BlobPart[], { type: 'application/x-ndjson' }));
      const a = document.createElement('a');
      a.href = url;
      a.download = exportFileName(tenant.name, new Date());
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      return { ...last, file: a.download };
    },
    onMutate: () => setProgress(null),
  });
  const tables = run.data ? Object.entries(run.data.end ?? {}).filter(([, n]) => n > 0) : [];
  return (
    <section className="panel" aria-labelledby="export-title">
      <h2 id="export-title">Export</h2>
      <p className="small muted">
        Everything the tenant has, as one JSONL file: a manifest, each table's rows, an end line with the
        counts (docs/TENANT-DATA.md). Audited as <span className="mono">tenant.exported</span>.
      </p>
      <button type="button" disabled={run.isPending} onClick={() => run.mutate()}>
        {run.isPending ? 'Exporting…' : 'Export'}
      </button>
      {run.isPending ? (
        <p role="status" data-testid="export-progress">
          {progress ? `${progress.rows} rows so far` : 'Starting the export'}…
        </p>
      ) : null}
      {run.isError ? <ErrorBox error={run.error} /> : null}
      {run.isSuccess ? (
        <div role="status" data-testid="export-done">
          <p>
            Exported {run.data.rows} rows from {tables.length} tables as{' '}
            <span className="mono">{run.data.file}</span>.
          </p>
          <dl className="audit-details">
            {tables.map(([table, n]) => (
              <div key={table}>
                <dt>{table}</dt>
                <dd className="mono">{n}</dd>
              </div>
            ))}
          </dl>
        </div>
      ) : null}
    </section>
  );
}

async function jsonOf(response: Response): Promise<unknown> {
  try {
    return (await response.json()) as unknown;
  } catch {
    return undefined;
  }
}

/** `transcriptRetentionDays`: older sessions' content purged by the maintenance job; empty = for ever. */
function RetentionPanel({ tenant }: { tenant: OperatorTenant }) {
  const api = useApi();
  const changed = useTenantChanged(tenant.id);
  const [days, setDays] = useState(fieldText(tenant.transcriptRetentionDays));
  const [invalid, setInvalid] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (value: number | null) =>
      unwrap(
        api.PATCH('/v1/admin/tenants/{id}', {
          params: { path: { id: tenant.id } },
          body: { transcriptRetentionDays: value },
        }),
      ),
    onSuccess: (t) => changed(t),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const parsed = parseRetention(days);
    if (!parsed.ok) return setInvalid(parsed.error);
    setInvalid(null);
    save.mutate(parsed.value);
  };
  return (
    <section className="panel" aria-labelledby="retention-title">
      <h2 id="retention-title">Transcript retention</h2>
      <p className="small muted" data-testid="retention-state">
        {tenant.transcriptRetentionDays === null
          ? 'Transcripts are kept for ever.'
          : `Content of sessions idle for more than ${tenant.transcriptRetentionDays} days is purged; their cost lines stay.`}
      </p>
      <SettingsForm
        onSubmit={submit}
        className="toolbar"
        save={save}
        submitLabel="Save retention"
        savedText="Retention saved."
        invalid={invalid}
      >
        <div>
          <label htmlFor="retention-days">Keep transcripts for (days, empty = for ever)</label>
          <input
            id="retention-days"
            inputMode="numeric"
            value={days}
            onChange={(e) => setDays(e.target.value)}
          />
        </div>
      </SettingsForm>
    </section>
  );
}

const MODES: [EncryptionMode, string][] = [
  ['off', 'off: content stored in clear'],
  ['on', 'on: content sealed, search indexes kept'],
  ['strict', 'strict: content sealed, no search indexes'],
];

/** The encryption mode and the data key's versions (never key material), with rotation. */
function EncryptionPanel({ tenantId }: { tenantId: string }) {
  const api = useApi();
  const queries = useQueryClient();
  const queryKey = ['operator', 'tenant', tenantId, 'data-keys'];
  const path = { params: { path: { id: tenantId } } };
  const keys = useQuery({
    queryKey,
    queryFn: () => unwrap(api.GET('/v1/admin/tenants/{id}/data-keys', path)),
  });
  const [mode, setMode] = useState<EncryptionMode | null>(null);
  const refresh = () => void queries.invalidateQueries({ queryKey: ['operator', 'tenant', tenantId] });
  const rotate = useMutation({
    mutationFn: () => unwrap(api.POST('/v1/admin/tenants/{id}/data-keys/rotate', path)),
    onSuccess: (list) => {
      queries.setQueryData(queryKey, list);
      refresh();
    },
  });
  const setEncryption = useMutation({
    mutationFn: (m: EncryptionMode) =>
      unwrap(api.PATCH('/v1/admin/tenants/{id}', { ...path, body: { encryption: { mode: m } } })),
    onSuccess: () => {
      setMode(null);
      refresh();
    },
  });
  const current = keys.data?.mode;
  const chosen = mode ?? current ?? 'off';
  return (
    <section className="panel" aria-labelledby="encryption-title">
      <h2 id="encryption-title">Encryption at rest</h2>
      {keys.isPending ? (
        <Loading what="Loading the data keys" />
      ) : keys.isError ? (
        <ErrorBox error={keys.error} />
      ) : (
        <>
          <form
            className="toolbar"
            onSubmit={(e) => {
              e.preventDefault();
              setEncryption.mutate(chosen);
            }}
          >
            <div>
              <label htmlFor="encryption-mode">Mode</label>
              <select
                id="encryption-mode"
                value={chosen}
                onChange={(e) => setMode(e.target.value as EncryptionMode)}
              >
                {MODES.map(([m, label]) => (
                  <option key={m} value={m}>
                    {label}
                  </option>
                ))}
              </select>
            </div>
            <button type="submit" disabled={setEncryption.isPending || chosen === current}>
              {setEncryption.isPending ? 'Saving…' : 'Save mode'}
            </button>
            <button
              type="button"
              className="primary"
              disabled={rotate.isPending}
              onClick={() => rotate.mutate()}
            >
              {rotate.isPending ? 'Rotating…' : 'Rotate data key'}
            </button>
          </form>
          <p className="small muted" data-testid="encryption-mode">
            In force: <span className="mono">{current}</span>. Rotating makes a new data-key version that
            seals new content at once; older content is re-sealed in the background.
          </p>
          {setEncryption.isError ? <ErrorBox error={setEncryption.error} /> : null}
          {rotate.isError ? <ErrorBox error={rotate.error} /> : null}
          {rotate.isSuccess && !rotate.isPending ? (
            <p role="status">
              Data key rotated: version {rotate.data.data.find((k) => k.state === 'active')?.version ?? '?'}{' '}
              is active.
            </p>
          ) : null}
          {keys.data.data.length === 0 ? (
            <p className="muted">No data key yet.</p>
          ) : (
            <table aria-label="Data-key versions">
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">State</th>
                  <th scope="col">Provider</th>
                  <th scope="col">Key-encryption key</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {keys.data.data.map((k) => (
                  <tr key={k.version} data-testid={`data-key-${k.version}`}>
                    <td>{k.version}</td>
                    <td>
                      <StatusBadge status={k.state} />
                    </td>
                    <td className="mono">{k.provider}</td>
                    <td className="mono">{k.kekId}</td>
                    <td>
                      <Time at={k.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}

/** Deletion behind the tenant's name typed again; its progress and receipt are on its own page. */
function DeletePanel({ tenant }: { tenant: OperatorTenant }) {
  const api = useApi();
  const queries = useQueryClient();
  const navigate = useNavigate();
  const [typed, setTyped] = useState('');
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/v1/admin/tenants/{id}', { params: { path: { id: tenant.id } } })),
    onSuccess: ({ deletion }) => {
      queries.removeQueries({ queryKey: ['operator', 'tenant', tenant.id] });
      void queries.invalidateQueries({ queryKey: ['operator'] });
      void navigate(`/operator/deletions/${deletion.id}`);
    },
  });
  const matches = typed === tenant.name;
  return (
    <section className="panel" aria-labelledby="delete-title">
      <h2 id="delete-title">Delete tenant</h2>
      <p className="small muted">
        Deletes every row of the tenant in every table, its Redis keys, queued jobs and stored originals, its
        data key first. It cannot be undone: export first if the data is wanted. The receipt goes to the
        operator's audit log as <span className="mono">tenant.deleted</span>.
      </p>
      <form
        className="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          if (matches) remove.mutate();
        }}
      >
        <div>
          <label htmlFor="delete-confirm">Type the tenant's name ({tenant.name}) to confirm</label>
          <input
            id="delete-confirm"
            value={typed}
            autoComplete="off"
            onChange={(e) => setTyped(e.target.value)}
          />
        </div>
        <button type="submit" className="danger" disabled={!matches || remove.isPending}>
          {remove.isPending ? 'Deleting…' : 'Delete tenant'}
        </button>
      </form>
      {remove.isError ? <ErrorBox error={remove.error} /> : null}
    </section>
  );
}
