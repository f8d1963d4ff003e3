import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function SessionPage() {
  return <Page title="Session">Not built yet.</Page>;
}
