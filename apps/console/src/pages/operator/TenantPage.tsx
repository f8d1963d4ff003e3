import { Page } from '../../components/ui';

// Placeholder until this page is built (issue 31).
export default function TenantPage() {
  return <Page title="Tenant">Not built yet.</Page>;
}
