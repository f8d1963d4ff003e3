import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function QueuesPage() {
  return <Page title="Queues">Not built yet.</Page>;
}
