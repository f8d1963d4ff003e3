import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function TenantsPage() {
  return <Page title="Tenants">Not built yet.</Page>;
}
