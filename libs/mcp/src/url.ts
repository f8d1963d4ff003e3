import { lookup } from 'node:dns/promises';
import { HostAllowList, refusedAddress, refusedName, ToolError } from '@switchboard/tools';

/**
 * Why an MCP server URL must not be connected to, or null (docs/adr/0023, the same address policy as
 * http_fetch, docs/adr/0021): a tenant-supplied URL must not reach private, loopback, link-local or
 * cloud-metadata addresses, unless the deployment exempts the host (MCP_ALLOW_HOSTS). Checked when a
 * server is registered and before every connection.
 */
export async function refusedServerUrl(raw: string, allow: HostAllowList): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `the scheme ${url.protocol} is not http or https`;
  if (url.username || url.password) return 'URLs with credentials are refused (use the auth header)';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (allow.allowsName(host) || allow.allowsAddress(host)) return null;
  if (refusedName(host)) return `${host} is a cloud metadata service`;
  const literal = refusedAddress(host);
  if (literal !== 'not an IP address') return literal ? `${host} is ${literal}` : null;
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true });
  } catch (err) {
    return `${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  for (const { address } of addresses) {
    const why = allow.allowsAddress(address) ? null : refusedAddress(address);
    if (why) return `${host} resolves to ${address} (${why})`;
  }
  return null;
}

/** The refusal as a tool failure, for a connection attempted at turn time. */
export function blockedServer(server: string, why: string): ToolError {
  return new ToolError('blocked_address', `MCP server "${server}" refused: ${why}`, {
    details: { server },
    retryable: false,
  });
}
