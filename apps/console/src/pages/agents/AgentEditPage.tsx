import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function AgentEditPage() {
  return <Page title="AgentEdit">Not built yet.</Page>;
}
