import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function SessionsPage() {
  return <Page title="Sessions">Not built yet.</Page>;
}
