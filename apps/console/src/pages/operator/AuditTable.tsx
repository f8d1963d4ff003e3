import { createColumnHelper } from '@tanstack/react-table';
import { Link } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { Time } from '../../components/ui';
import { detailLines } from '../../lib/audit-details';
import { auditSummary } from '../../lib/tenant-data';
import type { AuditEvent } from './admin';

const col = createColumnHelper<AuditEvent>();

/** The tenant-data entries (receipt, export, retention, rotation) read as a sentence above their lines. */
function summaryOf(e: AuditEvent) {
  const text = auditSummary(e.action, e.details);
  return text ? <p className="audit-summary">{text}</p> : null;
}

/** Audit entries, newest first; details as key: value lines of escaped text (they may quote tenant input). */
export function AuditTable({
  events,
  label,
  showTenant = true,
  summaryOnly = false,
  tenantNames,
}: {
  events: AuditEvent[];
  label: string;
  showTenant?: boolean;
  /**
   * Entries that read as a sentence show only the sentence (a page that already shows the same
   * figures, like a deletion's rows per table); the others keep their detail lines.
   */
  summaryOnly?: boolean;
  /** Tenant names by id, where known; otherwise the id's first characters. */
  tenantNames?: ReadonlyMap<string, string>;
}) {
  const columns = [
    col.accessor('createdAt', { header: 'When', cell: (c) => <Time at={c.getValue()} /> }),
    col.accessor('action', { header: 'Action', cell: (c) => <span className="mono">{c.getValue()}</span> }),
    col.accessor('actor', { header: 'Actor', cell: (c) => <span className="mono">{c.getValue()}</span> }),
    ...(showTenant
      ? [
          col.accessor('tenantId', {
            header: 'Tenant',
            cell: (c) => {
              const id = c.getValue();
              const name = id ? tenantNames?.get(id) : undefined;
              return id ? (
                <Link className={name ? undefined : 'mono'} to={`/operator/tenants/${id}`} title={id}>
                  {name ?? id.slice(0, 8)}
                </Link>
              ) : (
                <span className="muted">all</span>
              );
            },
          }),
        ]
      : []),
    col.accessor((e) => `${e.targetType}${e.targetId ? ` ${e.targetId.slice(0, 8)}` : ''}`, {
      id: 'target',
      header: 'Target',
      cell: (c) => <span className="mono">{c.getValue()}</span>,
    }),
    col.accessor('details', {
      header: 'Details',
      enableSorting: false,
      cell: (c) => {
        if (!Object.keys(c.getValue()).length) return <span className="muted">—</span>;
        const summary = summaryOf(c.row.original);
        if (summary && summaryOnly) return summary;
        return (
          <>
            {summary}
            <dl className="audit-details">
              {detailLines(c.getValue()).map(([key, value]) => (
                <div key={key}>
                  <dt>{key}</dt>
                  <dd className="mono">{value}</dd>
                </div>
              ))}
            </dl>
          </>
        );
      },
    }),
  ];
  return (
    <DataTable
      data={events}
      columns={columns}
      label={label}
      empty="No audit entries."
      rowTestId={(e) => `audit-${e.action}`}
    />
  );
}
