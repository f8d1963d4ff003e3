import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function UsagePage() {
  return <Page title="Usage">Not built yet.</Page>;
}
