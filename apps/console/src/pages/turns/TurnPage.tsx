import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function TurnPage() {
  return <Page title="Turn">Not built yet.</Page>;
}
