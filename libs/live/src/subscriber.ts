import type IORedis from 'ioredis';
import type { RedisOptions } from 'ioredis';
import type { Logger } from '@switchboard/observability';
import { createSubscriberRedis, type RedisTarget } from '@switchboard/queue';
import { decode, isEphemeral, progressChannel, sessionChannel, type LiveMessage } from './channel';

/** Ephemeral events a channel keeps per open round for listeners that join it (a round's worth). */
const OPEN_ROUND_EVENTS = 512;

/** What a reader hears on a session's channel. */
export interface LiveListener {
  /** The events of one PUBLISH, in seq order; some may already have been read from Postgres. */
  onEvents(events: LiveMessage[]): void;
  /**
   * The subscriber's connection dropped and is subscribed again: events published meanwhile were
   * lost. Read Postgres again from the reader's cursor.
   */
  onResync(): void;
}

export interface LiveSubscription {
  /**
   * Resolves true once Redis has confirmed the channel's subscription (a Postgres read after it
   * misses nothing), false when the subscription was closed first.
   */
  readonly ready: Promise<boolean>;
  readonly isReady: boolean;
  /** It hears the session's progress channel too (every batch, not only what settles a turn). */
  readonly following: boolean;
  /**
   * Hears the progress channel from now on too (a waiter's watch handed to a stream); `ready` and
   * `isReady` then wait for its subscription as well.
   */
  follow(): void;
  /** Stops listening; the channel is unsubscribed when its last listener leaves. */
  close(): void;
}

export interface LiveSubscriberOptions {
  /** The deployment's key prefix (QUEUE_PREFIX). */
  prefix: string;
  logger: Logger;
  /**
   * How long a channel stays subscribed after its last listener left (default 2000 ms): a client
   * that waits on turn after turn of one session costs no SUBSCRIBE/UNSUBSCRIBE per turn.
   */
  lingerMs?: number;
}

interface Channel {
  name: string;
  listeners: Set<Listening>;
  /** SUBSCRIBE confirmed on the current connection. */
  confirmed: boolean;
  /** Was subscribed before the connection dropped: its listeners resync once subscribed again. */
  stale?: boolean;
  waiters: ((ok: boolean) => void)[];
  linger?: NodeJS.Timeout;
  /**
   * Per turn, the ephemeral events heard since its last commit (docs/adr/0015): a listener that
   * joins while a round is open gets them first, so it takes that round's live frames from its
   * start instead of waiting for its commit.
   */
  open: Map<string | null, LiveMessage[]>;
}

interface Listening {
  listener: LiveListener;
  closed: boolean;
}

/**
 * One Redis connection in subscriber mode per process, multiplexing local listeners onto
 * per-session channel subscriptions, reference-counted: the first listener of a session
 * subscribes, the last one to leave unsubscribes (after `lingerMs`).
 *
 * After a dropped connection it subscribes again to every channel that still has listeners and,
 * once Redis confirms, tells each of them to resync: pub/sub kept nothing for them meanwhile.
 */
export class LiveSubscriber {
  private readonly channels = new Map<string, Channel>();
  private connectedBefore = false;
  private closed = false;

  /**
   * `redis` must be a connection of its own (subscriber mode allows no other commands) created with
   * `autoResubscribe: false`: this class resubscribes itself so it knows when to resync.
   */
  constructor(
    private readonly redis: IORedis,
    private readonly options: LiveSubscriberOptions,
  ) {
    if (redis.options.autoResubscribe) {
      throw new Error('LiveSubscriber needs a connection with autoResubscribe: false');
    }
    redis.on('message', (channel: string, message: string) => this.dispatch(channel, message));
    redis.on('ready', () => this.onReady());
    redis.on('close', () => {
      if (this.closed) return;
      // Not subscribed any more: new listeners wait for the resubscription, earlier ones resync after it.
      for (const channel of this.channels.values()) {
        if (channel.confirmed) channel.stale = true;
        channel.confirmed = false;
        channel.open.clear();
      }
      if (this.channels.size > 0) {
        options.logger.warn(
          { channels: this.channels.size },
          'live subscriber connection lost; reconnecting',
        );
      }
    });
    // Connection errors are retried by ioredis; without a listener they would crash the process.
    redis.on('error', (err: Error) => options.logger.debug({ err }, 'live subscriber connection error'));
  }

  /**
   * A subscriber on a new connection to `target` (REDIS_URL, or the deployment's target: on a cluster
   * a connection to one node, moving to another when that node fails) with the options it needs.
   */
  static connect(
    target: string | RedisTarget,
    options: LiveSubscriberOptions,
    redisOptions: RedisOptions = {},
  ): LiveSubscriber {
    return new LiveSubscriber(
      createSubscriberRedis(target, {
        // Commands wait for the connection rather than fail: a subscription made while Redis is
        // away is sent when it is back.
        maxRetriesPerRequest: null,
        ...redisOptions,
        autoResubscribe: false,
        // ioredis' ready check (INFO) races a SUBSCRIBE sent while the connection is still being
        // made (a lazy connection that several streams subscribe on at once): the INFO is refused in
        // subscriber mode, or the SUBSCRIBEs are, and their channels are never confirmed.
        enableReadyCheck: false,
        // Named with the deployment's prefix: CLIENT LIST tells one deployment's subscribers apart.
        connectionName: redisOptions.connectionName ?? `switchboard-live:${options.prefix}`,
      }),
      options,
    );
  }

  /**
   * Starts listening to a session. Wait for `ready` before reading Postgres. With `progress` (the
   * default) it hears every batch — the session's channel and its progress channel; without it only
   * what settles a turn (the session's channel: a waiter's need, docs/adr/0072) until `follow`.
   */
  listen(sessionId: string, listener: LiveListener, o: { progress?: boolean } = {}): LiveSubscription {
    if (this.closed) throw new Error('live subscriber is closed');
    const entry: Listening = { listener, closed: false };
    const parts = [this.attach(sessionChannel(this.options.prefix, sessionId), entry)];
    const progress = () => parts.push(this.attach(progressChannel(this.options.prefix, sessionId), entry));
    if (o.progress !== false) progress();
    return {
      get ready() {
        return Promise.all(parts.map((p) => p.ready)).then((oks) => oks.every(Boolean));
      },
      get isReady() {
        return !entry.closed && parts.every((p) => p.channel.confirmed);
      },
      get following() {
        return parts.length > 1;
      },
      follow: () => {
        if (!entry.closed && parts.length === 1) progress();
      },
      close: () => {
        if (entry.closed) return;
        entry.closed = true;
        for (const p of parts) {
          p.channel.listeners.delete(entry);
          if (p.channel.listeners.size === 0) this.release(p.channel);
        }
      },
    };
  }

  /** Adds a listener to a channel, subscribing to it when it is new here. */
  private attach(name: string, entry: Listening): { channel: Channel; ready: Promise<boolean> } {
    let channel = this.channels.get(name);
    if (!channel) {
      channel = { name, listeners: new Set(), confirmed: false, waiters: [], open: new Map() };
      this.channels.set(name, channel);
      this.subscribe(channel);
    }
    clearTimeout(channel.linger);
    channel.linger = undefined;
    channel.listeners.add(entry);
    const ch = channel;
    // The channel was already heard here: what its open rounds published so far comes first.
    const heard = [...ch.open.values()].flat();
    if (ch.confirmed && heard.length > 0) {
      queueMicrotask(() => {
        if (!entry.closed) this.deliver(ch, entry, heard);
      });
    }
    const ready = ch.confirmed
      ? Promise.resolve(true)
      : new Promise<boolean>((resolve) => ch.waiters.push(resolve));
    return { channel: ch, ready };
  }

  /**
   * A pull-style reader of one session's channel (see LiveWatch): by default only what settles a
   * turn (a waiter), every batch once `follow`ed (a stream) or with `progress: true`.
   */
  watch(sessionId: string, o: { progress?: boolean } = {}): LiveWatch {
    return new LiveWatch(this, sessionId, 256, o.progress ?? false);
  }

  /** Channels currently subscribed or lingering (for metrics and tests). */
  get channelCount(): number {
    return this.channels.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const ch of this.channels.values()) {
      clearTimeout(ch.linger);
      for (const resolve of ch.waiters.splice(0)) resolve(false);
    }
    this.channels.clear();
    this.redis.disconnect();
  }

  private subscribe(channel: Channel): void {
    this.redis.subscribe(channel.name).then(
      () => {
        // Closed (or released and subscribed anew) meanwhile: this answer is not the channel's any more.
        if (this.channels.get(channel.name) !== channel) return;
        channel.confirmed = true;
        for (const resolve of channel.waiters.splice(0)) resolve(true);
      },
      (err: unknown) => {
        if (!this.closed) this.options.logger.warn({ err, channel: channel.name }, 'live SUBSCRIBE failed');
      },
    );
  }

  private release(channel: Channel): void {
    const drop = () => {
      if (channel.listeners.size > 0 || this.channels.get(channel.name) !== channel) return;
      this.channels.delete(channel.name);
      for (const resolve of channel.waiters.splice(0)) resolve(false);
      if (this.closed) return;
      this.redis.unsubscribe(channel.name).catch((err: unknown) => {
        if (!this.closed) this.options.logger.warn({ err, channel: channel.name }, 'live UNSUBSCRIBE failed');
      });
    };
    const linger = this.options.lingerMs ?? 2000;
    if (linger <= 0) drop();
    else channel.linger = setTimeout(drop, linger).unref();
  }

  private dispatch(name: string, message: string): void {
    const channel = this.channels.get(name);
    if (!channel) return;
    const batch = decode(message);
    if (!batch) {
      this.options.logger.warn({ channel: name }, 'live message not understood; dropped');
      return;
    }
    // Kept while lingering too: a listener that joins then gets the open round. A commit heard on
    // the session's channel ends the turn's open round kept by its progress channel.
    keepOpenRounds(channel.open, batch.events);
    const progress = this.channels.get(progressChannel(this.options.prefix, batch.sessionId));
    if (progress && progress !== channel) keepOpenRounds(progress.open, batch.events);
    for (const entry of [...channel.listeners]) this.deliver(channel, entry, batch.events);
  }

  private deliver(channel: Channel, entry: Listening, events: LiveMessage[]): void {
    try {
      entry.listener.onEvents(events);
    } catch (err) {
      this.options.logger.error({ err, channel: channel.name }, 'live listener failed');
    }
  }

  /** After a reconnection: subscribe to every channel again, then tell their listeners to resync. */
  private onReady(): void {
    if (!this.connectedBefore) {
      this.connectedBefore = true;
      return;
    }
    const channels = [...this.channels.values()];
    if (channels.length === 0) return;
    this.redis.subscribe(...channels.map((c) => c.name)).then(
      () => {
        this.options.logger.info({ channels: channels.length }, 'live subscriber resubscribed');
        // A listener on both of a session's channels resyncs once.
        const resync = new Map<Listening, string>();
        for (const channel of channels) {
          if (this.channels.get(channel.name) !== channel) continue;
          const stale = channel.stale;
          channel.stale = false;
          channel.confirmed = true;
          for (const resolve of channel.waiters.splice(0)) resolve(true);
          if (!stale) continue;
          for (const entry of channel.listeners) resync.set(entry, channel.name);
        }
        for (const [entry, name] of resync) {
          if (entry.closed) continue;
          try {
            entry.listener.onResync();
          } catch (err) {
            this.options.logger.error({ err, channel: name }, 'live listener failed');
          }
        }
      },
      (err: unknown) => {
        if (!this.closed) this.options.logger.warn({ err }, 'live resubscribe failed');
      },
    );
  }
}

/**
 * Keeps each turn's ephemeral events since its last commit: a journaled event of the turn (its
 * commit) ends them, an ephemeral one that follows another commit (`after`), or a first one (index
 * 0) that is not the first kept, starts anew. Past
 * OPEN_ROUND_EVENTS a round's later events are not kept (a joining reader gets its start, and the
 * rest from the next whole copy or the commit).
 */
function keepOpenRounds(open: Map<string | null, LiveMessage[]>, events: readonly LiveMessage[]): void {
  for (const e of events) {
    if (!isEphemeral(e)) {
      open.delete(e.turnId);
      continue;
    }
    let kept = open.get(e.turnId);
    const first = kept?.[0];
    // Another commit's list, or the same list begun again (the turn run anew after a crash).
    const anew =
      first && isEphemeral(first) && (first.after !== e.after || (e.index === 0 && e.id !== first.id));
    if (!kept || anew) {
      kept = [];
      open.set(e.turnId, kept);
    }
    if (kept.length < OPEN_ROUND_EVENTS) kept.push(e);
  }
}

/** What `LiveWatch.next` returns. */
export type WatchResult = LiveMessage[] | 'resync' | 'timeout' | 'aborted';

/**
 * A session's live events pulled one batch at a time, for a request handler that waits for
 * something (`wait: true` on admission). Batches that arrive while nobody is pulling are kept in
 * order; past `maxQueued` they collapse into one `resync` (read Postgres instead).
 */
export class LiveWatch {
  readonly subscription: LiveSubscription;
  private readonly queue: (LiveMessage[] | 'resync')[] = [];
  private wake?: () => void;
  private closed = false;

  constructor(
    subscriber: LiveSubscriber,
    sessionId: string,
    private readonly maxQueued = 256,
    progress = false,
  ) {
    this.subscription = subscriber.listen(
      sessionId,
      {
        onEvents: (events) => this.push(events),
        onResync: () => this.push('resync'),
      },
      { progress },
    );
  }

  /**
   * Hears every batch from now on, not only what settles a turn (a stream); wait for `subscribed`
   * again before reading Postgres.
   */
  follow(): void {
    this.subscription.follow();
  }

  /** Waits for the subscription until the deadline: true once it is active. */
  async subscribed(deadline: number, signal?: AbortSignal): Promise<boolean> {
    if (this.subscription.isReady) return true;
    const outcome = await this.race(this.subscription.ready, deadline, signal);
    return outcome === true;
  }

  /** The next batch (or `resync`), or `timeout` at the deadline, or `aborted` when the signal fires. */
  async next(deadline: number, signal?: AbortSignal): Promise<WatchResult> {
    for (;;) {
      if (this.closed) return 'aborted';
      const queued = this.queue.shift();
      if (queued) return queued;
      const woken = new Promise<'woken'>((resolve) => (this.wake = () => resolve('woken')));
      const outcome = await this.race(woken, deadline, signal);
      this.wake = undefined;
      if (outcome !== 'woken') return outcome;
    }
  }

  close(): void {
    this.closed = true;
    this.subscription.close();
    this.wake?.();
  }

  private push(item: LiveMessage[] | 'resync'): void {
    if (this.queue.length >= this.maxQueued) this.queue.splice(0, this.queue.length, 'resync');
    else this.queue.push(item);
    this.wake?.();
  }

  private async race<T>(
    promise: Promise<T>,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<T | 'timeout' | 'aborted'> {
    if (signal?.aborted) return 'aborted';
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await Promise.race([
        promise,
        new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
        }),
        new Promise<'aborted'>((resolve) => {
          onAbort = () => resolve('aborted');
          signal?.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }
}
