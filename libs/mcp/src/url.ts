import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { HostAllowList, refusedAddress, refusedName, ToolError } from '@switchboard/tools';
import { Agent, fetch as undiciFetch } from 'undici';

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

/**
 * The address check where the connection is made (docs/adr/0023): the DNS step of every new
 * connection resolves, refuses when any address is refused (unless the deployment allows the name
 * or the address), and hands the checked addresses to the socket, so a second answer (DNS
 * rebinding) cannot slip in between the check and the connect.
 */
export function checkedLookup(server: string, allow: HostAllowList): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      if (!allow.allowsName(hostname)) {
        for (const a of addresses) {
          const why = allow.allowsAddress(a.address) ? null : refusedAddress(a.address);
          if (why)
            return callback(blockedServer(server, `${hostname} resolves to ${a.address} (${why})`), '', 0);
        }
      }
      if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** A `fetch` for one server's transport whose connections go through `checkedLookup`. */
export function guardedFetch(
  server: string,
  allow: HostAllowList,
): { fetch: FetchLike; close(): Promise<void> } {
  const agent = new Agent({ connect: { lookup: checkedLookup(server, allow) } });
  return {
    fetch: (url, init) => undiciFetch(url, { ...(init as object), dispatcher: agent }),
    close: () => agent.close(),
  };
}
