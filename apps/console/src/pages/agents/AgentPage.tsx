import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function AgentPage() {
  return <Page title="Agent">Not built yet.</Page>;
}
