import { useQueryClient } from '@tanstack/react-query';
import type { FormEvent, ReactNode } from 'react';
import { ErrorBox } from '../../components/ui';
import type { OperatorTenant } from './admin';

/** The operator's tenant query's key (GET /v1/admin/tenants/:id). */
export const tenantKey = (id: string) => ['operator', 'tenant', id];

/** After a change to the tenant: its query holds `updated` where the answer gave it, and the operator's views reload. */
export function useTenantChanged(id: string) {
  const queries = useQueryClient();
  return (updated?: OperatorTenant) => {
    if (updated) queries.setQueryData(tenantKey(id), updated);
    void queries.invalidateQueries({ queryKey: ['operator'] });
  };
}

/**
 * A form of the tenant's settings (caps, rate limits, retention): its fields, the save button, and
 * below it what the input was refused for (`invalid`), the save's error, or that it was saved.
 */
export function SettingsForm({
  onSubmit,
  className,
  save,
  submitLabel,
  savedText,
  invalid,
  children,
}: {
  onSubmit: (e: FormEvent) => void;
  className?: string;
  save: { isPending: boolean; isError: boolean; isSuccess: boolean; error: unknown };
  submitLabel: string;
  savedText: string;
  invalid: string | null;
  children: ReactNode;
}) {
  return (
    <>
      <form onSubmit={onSubmit} className={className}>
        {children}
        <button type="submit" className="primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : submitLabel}
        </button>
      </form>
      {invalid ? (
        <p className="error" role="alert">
          {invalid}
        </p>
      ) : null}
      {save.isError ? <ErrorBox error={save.error} /> : null}
      {save.isSuccess && !save.isPending ? <p role="status">{savedText}</p> : null}
    </>
  );
}
