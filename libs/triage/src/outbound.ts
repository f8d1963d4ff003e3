import { lookup as dnsLookup } from 'node:dns';
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { newId, parseTenantSettings, type OutboundWebhookJob } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';
import type { Logger } from '@switchboard/observability';
import { refusedAddress, refusedName } from '@switchboard/tools';

/**
 * True for an address a notification must not reach unless allowlisted: the same rules as
 * `http_fetch` (libs/tools, docs/adr/0021): private, loopback, link-local, CGNAT, multicast,
 * documentation ranges, anything but global unicast IPv6.
 */
export function isBlockedAddress(address: string): boolean {
  return refusedAddress(address) !== null;
}

export class RefusedAddressError extends Error {}

/**
 * Why a notify endpoint's host must not be sent to without resolving it, or null: a cloud metadata
 * name, or a literal IP that is blocked (isBlockedAddress). Hosts OUTBOUND_WEBHOOK_ALLOW_HOSTS lists
 * (`allowHosts`, lower-case names) are exempt. Checked at every send and when the URL is set.
 */
export function refusedNotifyHost(host: string, allowHosts: ReadonlySet<string>): string | null {
  const bare = host.replace(/^\[|\]$/g, '');
  if (allowHosts.has(bare.toLowerCase())) return null;
  if (refusedName(bare)) return `${bare} is a cloud metadata service`;
  if (isIP(bare) !== 0 && isBlockedAddress(bare)) return `${bare} is a private address`;
  return null;
}

/**
 * Why a notify endpoint must not be set, or null (`PATCH /v1/settings`): the send path's
 * rules, checked up front — refusedNotifyHost, then every address the name resolves to now, as
 * guardedLookup checks them at connect time. A name that does not resolve (yet) is accepted: at send
 * time it fails and is retried like any unreachable endpoint.
 */
export async function refusedNotifyUrl(raw: string, allowHosts: ReadonlySet<string>): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not a URL';
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const refused = refusedNotifyHost(host, allowHosts);
  if (refused || isIP(host) !== 0 || allowHosts.has(host.toLowerCase())) return refused;
  const addresses = await lookup(host, { all: true }).catch(() => []);
  const blocked = addresses.find((a) => isBlockedAddress(a.address));
  return blocked ? `${host} resolves to ${blocked.address}, a private address` : null;
}

/**
 * A DNS lookup that refuses blocked addresses at connect time, so a name that resolves to a public
 * address when checked and a private one when used (DNS rebinding) is still refused.
 */
export function guardedLookup(allowHosts: ReadonlySet<string>): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses;
      const allowed = allowHosts.has(hostname.toLowerCase());
      const refused = list.find((a) => !allowed && isBlockedAddress(a.address));
      if (refused) {
        return callback(
          new RefusedAddressError(`${hostname} resolves to ${refused.address}, a private address`),
          '',
          0,
        );
      }
      if (options.all) return callback(null, list, 0);
      return callback(null, list[0].address, list[0].family);
    });
  };
}

export interface OutboundDeps {
  db: Db;
  logger: Logger;
  /** OUTBOUND_WEBHOOK_ALLOW_HOSTS: host names allowed to resolve to private addresses. */
  allowHosts: ReadonlySet<string>;
  timeoutMs: number;
}

export type SendOutcome = 'delivered' | 'no_endpoint';

/** A failed attempt the queue should retry (non-2xx, timeout, connection error). */
export class DeliveryFailedError extends Error {}

/**
 * Sends one attempt of a signed notification (Standard Webhooks: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature` over `id.timestamp.body`) to the tenant's endpoint (or an A2A push config's,
 * `job.a2aPush`) and logs it in
 * `outbound_webhook_attempts`. Throws DeliveryFailedError to be retried, RefusedAddressError when
 * the endpoint is a private address (not worth retrying). No endpoint configured: logged, not retried.
 */
export async function sendNotification(
  deps: OutboundDeps,
  job: OutboundWebhookJob,
  attempt: number,
): Promise<SendOutcome> {
  const tenant = await deps.db.tenant.findUnique({ where: { id: job.tenantId }, select: { settings: true } });
  const settings = parseTenantSettings(tenant?.settings);
  const started = Date.now();
  const log = (url: string, status: number | null, error: string | null) =>
    deps.db.outboundWebhookAttempt.create({
      data: {
        id: newId(),
        tenantId: job.tenantId,
        webhookId: job.webhookId,
        url,
        event: job.event,
        attempt,
        status,
        error: error?.slice(0, 500) ?? null,
        durationMs: Date.now() - started,
      },
    });
  const target = await endpointOf(deps, job, settings);
  if ('none' in target) {
    await log(target.url, null, target.none);
    return 'no_endpoint';
  }
  const url = target.url;
  const timestamp = new Date();
  // A notify endpoint gets the Standard Webhooks envelope; an A2A push the task itself (its wire shape).
  const body = job.a2aPush
    ? JSON.stringify(job.payload)
    : JSON.stringify({ type: job.event, timestamp: timestamp.toISOString(), data: job.payload });
  const signature = new Webhook(target.secret).sign(job.webhookId, timestamp, body);
  let status: number | null = null;
  try {
    status = await post(
      url,
      body,
      {
        'content-type': 'application/json',
        ...target.headers,
        'webhook-id': job.webhookId,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': signature,
        'user-agent': 'switchboard-webhooks/1',
      },
      deps,
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await log(url, null, message);
    if (err instanceof RefusedAddressError) throw err;
    throw new DeliveryFailedError(message);
  }
  const ok = status >= 200 && status < 300;
  await log(url, status, ok ? null : `answered ${status}`);
  if (!ok) throw new DeliveryFailedError(`${url} answered ${status}`);
  return 'delivered';
}

type Endpoint =
  { url: string; secret: string; headers: Record<string, string> } | { url: string; none: string };

/**
 * Where an attempt goes: the tenant's notify endpoint, or for an A2A push its config's URL (read now,
 * tenant-scoped) with its token (`X-A2A-Notification-Token`) and authentication (`Authorization:
 * <scheme> <credentials>`) as the A2A specification defines them. Both are signed with the tenant's
 * secret; without one (or without the config, deleted since) there is nothing to send.
 */
async function endpointOf(
  deps: OutboundDeps,
  job: OutboundWebhookJob,
  settings: ReturnType<typeof parseTenantSettings>,
): Promise<Endpoint> {
  if (!job.a2aPush) {
    if (!settings.notifyUrl || !settings.notifySecret)
      return { url: '', none: 'the tenant has no notify endpoint' };
    return { url: settings.notifyUrl, secret: settings.notifySecret, headers: {} };
  }
  const [config] = await deps.db.$queryRaw<
    {
      url: string;
      token: string | null;
      scheme: string | null;
      credentials: string | null;
      version: string;
    }[]
  >`SELECT url, token, auth_scheme AS scheme, auth_credentials AS credentials, protocol_version AS version
    FROM a2a_push_configs
    WHERE turn_id = ${job.a2aPush.turnId}::uuid AND config_id = ${job.a2aPush.configId}
      AND tenant_id = ${job.tenantId}::uuid`;
  if (!config) return { url: '', none: 'the A2A push notification config was deleted' };
  if (!settings.notifySecret) return { url: config.url, none: 'the tenant has no webhook signing secret' };
  return {
    url: config.url,
    secret: settings.notifySecret,
    headers: {
      // v1.0's media type for its StreamResponse body; v0.3 posts plain JSON.
      'content-type': config.version === '0.3' ? 'application/json' : 'application/a2a+json',
      ...(config.token ? { 'x-a2a-notification-token': config.token } : {}),
      ...(config.scheme && config.credentials
        ? { authorization: `${config.scheme} ${config.credentials}` }
        : {}),
    },
  };
}

/** One POST; redirects are not followed (a redirect could point anywhere). Resolves with the status. */
function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  deps: OutboundDeps,
): Promise<number> {
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  const host = target.hostname.replace(/^\[|\]$/g, '');
  // A literal IP never goes through the lookup: check it here. Metadata names are refused by name.
  const refused = refusedNotifyHost(host, deps.allowHosts);
  if (refused) return Promise.reject(new RefusedAddressError(refused));
  return new Promise((resolve, reject) => {
    const req = client.request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: guardedLookup(deps.allowHosts),
        // A fresh connection per attempt: a pooled socket would skip the lookup's address check.
        agent: false,
        timeout: deps.timeoutMs,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${deps.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
