import { QueryClientProvider } from '@tanstack/react-query';
import { lazy, Suspense, useMemo, type ComponentType, type ReactNode } from 'react';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { ApiProvider, createQueryClient } from './api';
import { AuthProvider, seesTenant, useAuth } from './auth';
import { Loading } from './components/ui';
import { Layout } from './layout';
import { SignIn } from './pages/SignIn';

/** Each page is its own chunk: the first screen loads only the shell and the page it shows. */
const page = (load: () => Promise<{ default: ComponentType }>) => lazy(load);
const Sessions = page(() => import('./pages/sessions/SessionsPage'));
const Session = page(() => import('./pages/sessions/SessionPage'));
const Turn = page(() => import('./pages/turns/TurnPage'));
const Approvals = page(() => import('./pages/approvals/ApprovalsPage'));
const Agents = page(() => import('./pages/agents/AgentsPage'));
const AgentEdit = page(() => import('./pages/agents/AgentEditPage'));
const Agent = page(() => import('./pages/agents/AgentPage'));
const Inputs = page(() => import('./pages/inputs/InputsPage'));
const Usage = page(() => import('./pages/usage/UsagePage'));
const Datasets = page(() => import('./pages/evaluation/DatasetsPage'));
const Dataset = page(() => import('./pages/evaluation/DatasetPage'));
const Experiment = page(() => import('./pages/evaluation/ExperimentPage'));
const Tenants = page(() => import('./pages/operator/TenantsPage'));
const Tenant = page(() => import('./pages/operator/TenantPage'));
const Queues = page(() => import('./pages/operator/QueuesPage'));
const Processes = page(() => import('./pages/operator/ProcessesPage'));
const Audit = page(() => import('./pages/operator/AuditPage'));
const Deletions = page(() => import('./pages/operator/DeletionsPage'));
const Deletion = page(() => import('./pages/operator/DeletionPage'));

export function App() {
  return (
    <AuthProvider>
      <Queries>
        <ApiProvider>
          <BrowserRouter basename="/console">
            <AppRoutes />
          </BrowserRouter>
        </ApiProvider>
      </Queries>
    </AuthProvider>
  );
}

/** One query cache per sign-in; a 401 from any query signs out with a notice. */
function Queries({ children }: { children: ReactNode }) {
  const { signOut } = useAuth();
  const client = useMemo(
    () =>
      createQueryClient(() =>
        signOut('The API refused this key: it was revoked or has expired. Sign in again.'),
      ),
    [signOut],
  );
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}

function AppRoutes() {
  const { credential } = useAuth();
  if (!credential) {
    return (
      <Routes>
        <Route path="/sign-in" element={<SignIn />} />
        <Route path="*" element={<Navigate to="/sign-in" replace />} />
      </Routes>
    );
  }
  const tenant = seesTenant(credential);
  const operator = credential.kind === 'operator' && !credential.actingTenant;
  const home = operator ? '/operator/tenants' : '/sessions';
  return (
    <Layout>
      <Suspense fallback={<Loading />}>
        <Routes>
          {tenant ? (
            <>
              <Route path="/sessions" element={<Sessions />} />
              <Route path="/sessions/:id" element={<Session />} />
              <Route path="/turns/:id" element={<Turn />} />
              <Route path="/approvals" element={<Approvals />} />
              <Route path="/agents" element={<Agents />} />
              <Route path="/agents/new" element={<AgentEdit />} />
              <Route path="/agents/:id/edit" element={<AgentEdit />} />
              <Route path="/agents/:id" element={<Agent />} />
              <Route path="/inputs" element={<Inputs />} />
              <Route path="/usage" element={<Usage />} />
              <Route path="/datasets" element={<Datasets />} />
              <Route path="/datasets/:id" element={<Dataset />} />
              <Route path="/experiments/:id" element={<Experiment />} />
            </>
          ) : null}
          {operator ? (
            <>
              <Route path="/operator/tenants" element={<Tenants />} />
              <Route path="/operator/tenants/:id" element={<Tenant />} />
              <Route path="/operator/queues" element={<Queues />} />
              <Route path="/operator/processes" element={<Processes />} />
              <Route path="/operator/audit" element={<Audit />} />
              <Route path="/operator/deletions" element={<Deletions />} />
              <Route path="/operator/deletions/:id" element={<Deletion />} />
            </>
          ) : null}
          <Route path="*" element={<Navigate to={home} replace />} />
        </Routes>
      </Suspense>
    </Layout>
  );
}
