import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function AuditPage() {
  return <Page title="Audit">Not built yet.</Page>;
}
