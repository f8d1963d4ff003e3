import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createColumnHelper } from '@tanstack/react-table';
import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import { unwrap, useApi } from '../../api';
import { DataTable } from '../../components/DataTable';
import { ErrorBox, Loading, Money, Page, StatusBadge, Time } from '../../components/ui';
import { fieldText, parseSetting } from '../../lib/operator-form';
import { RATE_BUCKETS, useOpenTenantView, type ApiKey, type OperatorTenant, type RateBucket } from './admin';
import { AuditTable } from './AuditTable';
import { OneTimeKey } from './OneTimeKey';
import { TenantDataPanels } from './TenantDataPanels';
import { SettingsForm, tenantKey, useTenantChanged } from './TenantSettingsForm';

/** One tenant: its load and spend, caps and rate limits (editable), pause, API keys, recent audit. */
export default function TenantPage() {
  const { id = '' } = useParams();
  // Keyed by the tenant: going from one tenant's page to another's starts its forms afresh.
  return <TenantView key={id} id={id} />;
}

function TenantView({ id }: { id: string }) {
  const api = useApi();
  const open = useOpenTenantView();
  const tenant = useQuery({
    queryKey: tenantKey(id),
    queryFn: () => unwrap(api.GET('/v1/admin/tenants/{id}', { params: { path: { id } } })),
    refetchInterval: 5_000,
  });
  if (tenant.isPending) return <Loading what="Loading the tenant" />;
  if (tenant.isError) {
    return (
      <Page title="Tenant">
        <ErrorBox error={tenant.error} />
        <Link to="/operator/tenants">All tenants</Link>
      </Page>
    );
  }
  const t = tenant.data;
  return (
    <Page
      title={t.name}
      actions={
        <>
          <StatusBadge status={t.paused ? 'paused' : 'active'} />
          <button type="button" onClick={() => open(t)}>
            Open tenant view
          </button>
        </>
      }
    >
      <p className="small muted">
        <Link to="/operator/tenants">All tenants</Link> · <span className="mono">{t.id}</span> · created{' '}
        <Time at={t.createdAt} />
      </p>
      <div className="grid">
        <section className="panel" aria-labelledby="load-title">
          <h2 id="load-title">Now</h2>
          <dl className="facts">
            <dt>Running turns</dt>
            <dd data-testid="tenant-running">{t.turns.running}</dd>
            <dt>Queued turns</dt>
            <dd data-testid="tenant-queued">{t.turns.queued}</dd>
            <dt>Waiting turns</dt>
            <dd>{t.turns.waiting}</dd>
            <dt>Spend today</dt>
            <dd>
              <Money usd={t.spentTodayUsd} />
              {t.dailySpendLimitUsd !== null ? (
                <>
                  {' '}
                  of <Money usd={t.dailySpendLimitUsd} />
                </>
              ) : null}
            </dd>
          </dl>
        </section>
        <PausePanel tenant={t} />
      </div>
      <CapsPanel tenant={t} />
      <RateLimitsPanel tenant={t} />
      <ApiKeysPanel tenantId={t.id} />
      <TenantDataPanels tenant={t} />
      <RecentAudit tenantId={t.id} />
    </Page>
  );
}

/** Pause stops admission (403 tenant_paused) and running turns at their next safe point; resume wakes the queue. */
function PausePanel({ tenant }: { tenant: OperatorTenant }) {
  const api = useApi();
  const changed = useTenantChanged(tenant.id);
  const [reason, setReason] = useState('');
  const path = { params: { path: { id: tenant.id } } };
  const pause = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/v1/admin/tenants/{id}/pause', {
          ...path,
          body: reason.trim() ? { reason: reason.trim() } : {},
        }),
      ),
    onSuccess: (t) => {
      setReason('');
      changed(t);
    },
  });
  const resume = useMutation({
    mutationFn: () => unwrap(api.POST('/v1/admin/tenants/{id}/resume', { ...path, body: {} })),
    onSuccess: (t) => changed(t),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    pause.mutate();
  };
  return (
    <section className="panel" aria-labelledby="pause-title">
      <h2 id="pause-title">Pause</h2>
      {tenant.paused ? (
        <>
          <p data-testid="pause-state">
            Paused <Time at={tenant.pausedAt} />
            {tenant.pauseReason ? <>: {tenant.pauseReason}</> : null}. New input is refused; queued turns
            wait.
          </p>
          <button
            type="button"
            className="primary"
            disabled={resume.isPending}
            onClick={() => resume.mutate()}
          >
            {resume.isPending ? 'Resuming…' : 'Resume tenant'}
          </button>
        </>
      ) : (
        <form onSubmit={submit}>
          <p className="small muted" data-testid="pause-state">
            Active. Pausing refuses its new input (403 tenant_paused), stops running turns at their next safe
            point and keeps queued ones.
          </p>
          <label htmlFor="pause-reason">Pause reason (optional, audited)</label>
          <input
            id="pause-reason"
            value={reason}
            maxLength={500}
            onChange={(e) => setReason(e.target.value)}
          />
          <p>
            <button type="submit" className="danger" disabled={pause.isPending}>
              {pause.isPending ? 'Pausing…' : 'Pause tenant'}
            </button>
          </p>
        </form>
      )}
      {pause.isError ? <ErrorBox error={pause.error} /> : null}
      {resume.isError ? <ErrorBox error={resume.error} /> : null}
    </section>
  );
}

type UpdateCaps = {
  maxConcurrentTurns?: number | null;
  share?: number | null;
  dailySpendLimitUsd?: number | null;
};

/** Concurrency cap, fair-share weight and daily spend cap (docs/adr/0030); an empty field is the default. */
function CapsPanel({ tenant }: { tenant: OperatorTenant }) {
  const api = useApi();
  const changed = useTenantChanged(tenant.id);
  const [cap, setCap] = useState(fieldText(tenant.maxConcurrentTurns));
  const [share, setShare] = useState(tenant.share === 1 ? '' : fieldText(tenant.share));
  const [spend, setSpend] = useState(fieldText(tenant.dailySpendLimitUsd));
  const [invalid, setInvalid] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (body: UpdateCaps) =>
      unwrap(api.PATCH('/v1/admin/tenants/{id}', { params: { path: { id: tenant.id } }, body })),
    onSuccess: (t) => changed(t),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const fields = [
      parseSetting(cap, { min: 1, max: 100_000, integer: true, label: 'Concurrency cap' }),
      parseSetting(share, { min: 0.1, max: 100, label: 'Fair share' }),
      parseSetting(spend, { min: 0, max: 1_000_000, label: 'Daily spend cap' }),
    ];
    const bad = fields.find((f) => !f.ok);
    if (bad && !bad.ok) return setInvalid(bad.error);
    setInvalid(null);
    const [c, s, d] = fields.map((f) => (f.ok ? f.value : null));
    // Only what changed, so the audit log records what the operator meant to change.
    const body: UpdateCaps = {};
    if (c !== tenant.maxConcurrentTurns) body.maxConcurrentTurns = c;
    if ((s ?? 1) !== tenant.share) body.share = s;
    if (d !== tenant.dailySpendLimitUsd) body.dailySpendLimitUsd = d;
    if (Object.keys(body).length === 0) return setInvalid('Nothing changed.');
    save.mutate(body);
  };
  return (
    <section className="panel" aria-labelledby="caps-title">
      <h2 id="caps-title">Caps and share</h2>
      <p className="small muted">Leave a field empty for the deployment's default.</p>
      <SettingsForm
        onSubmit={submit}
        className="toolbar"
        save={save}
        submitLabel="Save caps"
        savedText="Caps saved."
        invalid={invalid}
      >
        <div>
          <label htmlFor="cap">Concurrency cap (turns)</label>
          <input id="cap" inputMode="numeric" value={cap} onChange={(e) => setCap(e.target.value)} />
        </div>
        <div>
          <label htmlFor="share">Fair share (weight, default 1)</label>
          <input id="share" inputMode="decimal" value={share} onChange={(e) => setShare(e.target.value)} />
        </div>
        <div>
          <label htmlFor="spend-cap">Daily spend cap (USD)</label>
          <input
            id="spend-cap"
            inputMode="decimal"
            value={spend}
            onChange={(e) => setSpend(e.target.value)}
          />
        </div>
      </SettingsForm>
    </section>
  );
}

/** Requests per minute per bucket (docs/adr/0028): empty = the deployment's default, 0 = unlimited. */
function RateLimitsPanel({ tenant }: { tenant: OperatorTenant }) {
  const api = useApi();
  const changed = useTenantChanged(tenant.id);
  const [values, setValues] = useState<Record<RateBucket, string>>(
    () =>
      Object.fromEntries(RATE_BUCKETS.map(([k]) => [k, fieldText(tenant.rateLimits[k])])) as Record<
        RateBucket,
        string
      >,
  );
  const [invalid, setInvalid] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (body: Partial<Record<RateBucket, number | null>>) =>
      unwrap(api.PATCH('/v1/admin/tenants/{id}/limits', { params: { path: { id: tenant.id } }, body })),
    onSuccess: () => changed(),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body: Partial<Record<RateBucket, number | null>> = {};
    for (const [key, label] of RATE_BUCKETS) {
      const v = parseSetting(values[key], { min: 0, max: 1_000_000, integer: true, label });
      if (!v.ok) return setInvalid(v.error);
      // Only the buckets that changed: the others keep their override or default.
      if (v.value !== (tenant.rateLimits[key] ?? null)) body[key] = v.value;
    }
    if (Object.keys(body).length === 0) return setInvalid('Nothing changed.');
    setInvalid(null);
    save.mutate(body);
  };
  const effective = save.data?.effective;
  return (
    <section className="panel" aria-labelledby="limits-title">
      <h2 id="limits-title">Rate limits (requests per minute)</h2>
      <p className="small muted">Empty: the deployment's default. 0: unlimited.</p>
      <SettingsForm
        onSubmit={submit}
        save={save}
        submitLabel="Save rate limits"
        savedText="Rate limits saved."
        invalid={invalid}
      >
        <div className="toolbar">
          {RATE_BUCKETS.map(([key, label]) => (
            <div key={key}>
              <label htmlFor={`limit-${key}`}>{label}</label>
              <input
                id={`limit-${key}`}
                inputMode="numeric"
                size={8}
                value={values[key]}
                onChange={(e) => setValues((v) => ({ ...v, [key]: e.target.value }))}
              />
              {effective ? <div className="small muted">now {effective[key] || 'unlimited'}</div> : null}
            </div>
          ))}
        </div>
      </SettingsForm>
    </section>
  );
}

const keyCol = createColumnHelper<ApiKey>();

/** The roles a key may have (docs/adr/0066); `admin` is every key's before roles. */
const KEY_ROLES = ['admin', 'developer', 'approver', 'reader', 'ingest'] as const;
type KeyRole = (typeof KEY_ROLES)[number];

/** The tenant's API keys: never their secret, except a new one's, once. */
function ApiKeysPanel({ tenantId }: { tenantId: string }) {
  const api = useApi();
  const queries = useQueryClient();
  const queryKey = ['operator', 'tenant', tenantId, 'api-keys'];
  const path = { params: { path: { id: tenantId } } };
  const keys = useQuery({
    queryKey,
    queryFn: () => unwrap(api.GET('/v1/admin/tenants/{id}/api-keys', path)),
  });
  const [name, setName] = useState('');
  const [role, setRole] = useState<KeyRole>('admin');
  const [created, setCreated] = useState<{ prefix: string; key: string } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const refresh = () => void queries.invalidateQueries({ queryKey: ['operator', 'tenant', tenantId] });
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/v1/admin/tenants/{id}/api-keys', {
          ...path,
          body: { ...(name.trim() ? { name: name.trim() } : {}), ...(role !== 'admin' ? { role } : {}) },
        }),
      ),
    // The answer holds the key: dropped from the mutation cache as soon as nothing shows it.
    gcTime: 0,
    onSuccess: (k) => {
      setCreated(k);
      setName('');
      setRole('admin');
      refresh();
    },
  });
  const revoke = useMutation({
    mutationFn: (keyId: string) =>
      unwrap(
        api.DELETE('/v1/admin/tenants/{id}/api-keys/{keyId}', { params: { path: { id: tenantId, keyId } } }),
      ),
    onSuccess: () => {
      setConfirming(null);
      refresh();
    },
  });
  const columns = [
    keyCol.accessor('prefix', { header: 'Key', cell: (c) => <span className="mono">{c.getValue()}…</span> }),
    keyCol.accessor('name', {
      header: 'Name',
      cell: (c) => c.getValue() ?? <span className="muted">—</span>,
    }),
    // What the key may do (docs/adr/0066): its role, the agents it is limited to, its expiry.
    keyCol.accessor('role', { header: 'Role', cell: (c) => <span className="mono">{c.getValue()}</span> }),
    keyCol.accessor('agentIds', {
      header: 'Agents',
      cell: (c) => {
        const ids = c.getValue();
        return ids ? (
          <span className="mono" title={ids.join(', ')}>
            {ids.length === 1 ? ids[0] : `${ids.length} agents`}
          </span>
        ) : (
          <span className="muted">all</span>
        );
      },
    }),
    keyCol.accessor('expiresAt', {
      header: 'Expires',
      cell: (c) => {
        const at = c.getValue();
        return at ? <Time at={at} /> : <span className="muted">never</span>;
      },
    }),
    keyCol.accessor('createdAt', { header: 'Created', cell: (c) => <Time at={c.getValue()} /> }),
    keyCol.accessor('lastUsedAt', { header: 'Last used', cell: (c) => <Time at={c.getValue()} /> }),
    keyCol.display({
      id: 'state',
      header: 'State',
      cell: (c) =>
        c.row.original.revokedAt ? (
          <>
            <StatusBadge status="revoked" /> <Time at={c.row.original.revokedAt} />
          </>
        ) : confirming === c.row.original.id ? (
          <span className="actions">
            <button
              type="button"
              className="danger"
              disabled={revoke.isPending}
              aria-label={`Confirm revoking key ${c.row.original.prefix}`}
              onClick={() => revoke.mutate(c.row.original.id)}
            >
              Revoke now
            </button>
            <button type="button" onClick={() => setConfirming(null)}>
              Keep
            </button>
          </span>
        ) : (
          <button
            type="button"
            aria-label={`Revoke key ${c.row.original.prefix}`}
            onClick={() => setConfirming(c.row.original.id)}
          >
            Revoke
          </button>
        ),
    }),
  ];
  return (
    <section className="panel" aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <form
        className="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <div>
          <label htmlFor="new-key-name">New key name (optional)</label>
          <input id="new-key-name" value={name} maxLength={120} onChange={(e) => setName(e.target.value)} />
        </div>
        <div>
          <label htmlFor="new-key-role">Role</label>
          <select id="new-key-role" value={role} onChange={(e) => setRole(e.target.value as KeyRole)}>
            {KEY_ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create key'}
        </button>
      </form>
      {create.isError ? <ErrorBox error={create.error} /> : null}
      {created ? (
        <OneTimeKey
          label={`New key ${created.prefix}`}
          secret={created.key}
          onDone={() => {
            setCreated(null);
            create.reset();
          }}
        />
      ) : null}
      {revoke.isError ? <ErrorBox error={revoke.error} /> : null}
      {keys.isPending ? (
        <Loading what="Loading keys" />
      ) : keys.isError ? (
        <ErrorBox error={keys.error} />
      ) : (
        <DataTable
          data={keys.data.data}
          columns={columns}
          label="API keys"
          empty="No keys."
          rowTestId={(k) => `key-${k.prefix}`}
        />
      )}
    </section>
  );
}

function RecentAudit({ tenantId }: { tenantId: string }) {
  const api = useApi();
  const events = useQuery({
    queryKey: ['operator', 'tenant', tenantId, 'audit'],
    queryFn: () => unwrap(api.GET('/v1/admin/audit-events', { params: { query: { tenantId, limit: 20 } } })),
  });
  return (
    <section className="panel" aria-labelledby="audit-title">
      <h2 id="audit-title">Recent audit entries</h2>
      {events.isPending ? (
        <Loading what="Loading the audit log" />
      ) : events.isError ? (
        <ErrorBox error={events.error} />
      ) : (
        <AuditTable events={events.data.data} label="Recent audit entries" showTenant={false} />
      )}
      <p>
        <Link to={`/operator/audit?tenantId=${tenantId}`}>The tenant's whole audit log</Link>
      </p>
    </section>
  );
}
