import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function InputsPage() {
  return <Page title="Inputs">Not built yet.</Page>;
}
