import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function ProcessesPage() {
  return <Page title="Processes">Not built yet.</Page>;
}
