import { SwitchboardError } from '@switchboard/client';
import { useEffect, useRef, useState } from 'react';
import { useClient } from '../../api';
import { useAuth } from '../../auth';
import { SessionStream } from '../../lib/session-stream';

export type Connection = 'connecting' | 'live' | 'reconnecting' | 'failed';

/** Longest wait between reconnects (a gateway restarting, a network blip). */
const MAX_BACKOFF_MS = 5_000;

/**
 * A session's live stream (GET /v1/sessions/:id/stream) folded by `SessionStream`. On a dropped
 * connection it reconnects with `after` = the last journaled seq received (the provisional text is
 * dropped and comes again), backing off up to 5 s. Renders at most once per animation frame, so a
 * fast stream (hundreds of deltas a second) costs one React render per frame, not per delta.
 */
export function useSessionStream(sessionId: string): {
  stream: SessionStream;
  connection: Connection;
  error: string | null;
} {
  const client = useClient();
  const { signOut } = useAuth();
  const ref = useRef<{ id: string; stream: SessionStream } | null>(null);
  if (ref.current?.id !== sessionId) ref.current = { id: sessionId, stream: new SessionStream() };
  const stream = ref.current.stream;
  const [connection, setConnection] = useState<Connection>('connecting');
  const [error, setError] = useState<string | null>(null);
  const [, setTick] = useState(0);

  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    let frame = 0;
    const render = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        setTick((t) => t + 1);
      });
    };
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });

    void (async () => {
      let backoff = 250;
      while (!signal.aborted) {
        try {
          for await (const f of client.streamSession(sessionId, { after: stream.lastSeq, signal })) {
            setConnection('live');
            backoff = 250;
            // A journaled frame skipped seqs: resume from the last one (the journal fills the gap).
            if (stream.apply(f) === 'gap') break;
            render();
          }
        } catch (e) {
          if (signal.aborted) return;
          if (e instanceof SwitchboardError && e.status === 401) {
            signOut('The API refused this key: it was revoked or has expired. Sign in again.');
            return;
          }
          if (e instanceof SwitchboardError && e.status >= 400 && e.status < 500) {
            setError(`The stream was refused (HTTP ${e.status}).`);
            setConnection('failed');
            return;
          }
        }
        if (signal.aborted) return;
        // Dropped (or ended by the gateway draining): forget the provisional text, resume after the last seq.
        stream.reconnect();
        setConnection('reconnecting');
        render();
        await pause(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    })();
    return () => {
      abort.abort();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [client, sessionId, stream, signOut]);

  return { stream, connection, error };
}
