import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function AgentsPage() {
  return <Page title="Agents">Not built yet.</Page>;
}
