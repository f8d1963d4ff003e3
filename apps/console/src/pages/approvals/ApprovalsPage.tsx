import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function ApprovalsPage() {
  return <Page title="Approvals">Not built yet.</Page>;
}
