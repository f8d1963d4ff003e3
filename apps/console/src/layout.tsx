import { useQueryClient } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { NavLink, useNavigate } from 'react-router';
import { seesTenant, useAuth } from './auth';

const TENANT_NAV: [string, string][] = [
  ['/sessions', 'Sessions'],
  ['/approvals', 'Approvals'],
  ['/agents', 'Agents'],
  ['/inputs', 'Inputs'],
  ['/datasets', 'Datasets'],
  ['/usage', 'Usage'],
];
const OPERATOR_NAV: [string, string][] = [
  ['/operator/tenants', 'Tenants'],
  ['/operator/queues', 'Queues'],
  ['/operator/processes', 'Processes'],
  ['/operator/audit', 'Audit log'],
  ['/operator/deletions', 'Deletions'],
];

/** The frame around every signed-in page: navigation, who is signed in, sign-out. */
export function Layout({ children }: { children: ReactNode }) {
  const { credential, signOut, actAs } = useAuth();
  const queries = useQueryClient();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  if (!credential) return null;

  const who =
    credential.kind === 'tenant'
      ? `Tenant key ${credential.label}`
      : credential.actingTenant
        ? `Operator, viewing ${credential.actingTenant.name}`
        : 'Operator';

  const leave = () => {
    queries.clear();
    signOut();
    void navigate('/sign-in', { replace: true });
  };
  const backToOperator = () => {
    queries.clear();
    actAs(null);
    void navigate('/operator/tenants');
  };

  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <button
          type="button"
          className="menu-toggle"
          aria-expanded={open}
          aria-controls="nav"
          onClick={() => setOpen((o) => !o)}
        >
          Menu
        </button>
        <span className="brand">Switchboard</span>
        <span className="who" data-testid="who">
          {who}
        </span>
        {credential.kind === 'operator' && credential.actingTenant ? (
          <button type="button" onClick={backToOperator}>
            Back to operator view
          </button>
        ) : null}
        <button type="button" onClick={leave}>
          Sign out
        </button>
      </header>
      <nav id="nav" className={open ? 'nav open' : 'nav'} aria-label="Main" onClick={() => setOpen(false)}>
        {seesTenant(credential) ? <NavList items={TENANT_NAV} /> : null}
        {credential.kind === 'operator' && !credential.actingTenant ? <NavList items={OPERATOR_NAV} /> : null}
      </nav>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

function NavList({ items }: { items: [string, string][] }) {
  return (
    <ul>
      {items.map(([to, label]) => (
        <li key={to}>
          <NavLink to={to}>{label}</NavLink>
        </li>
      ))}
    </ul>
  );
}
