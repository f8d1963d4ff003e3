import { useEffect, useRef, useState } from 'react';
import { useClient } from '../../api';
import { useAuth } from '../../auth';
import { follow, SessionStream } from '../../lib/session-stream';

export type Connection = 'connecting' | 'live' | 'reconnecting' | 'failed';

/**
 * A session's live stream (GET /v1/sessions/:id/stream) folded by `SessionStream`, followed by
 * `follow` (reconnects after the last journaled seq, the provisional text dropped and sent again).
 * Renders at most once per animation frame, so a fast stream (hundreds of deltas a second) costs one
 * React render per frame, not one per delta.
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
    const onChange = () => {
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
    void follow(stream, {
      open: (after, s) => client.streamSession(sessionId, { after, signal: s }),
      signal,
      onChange,
      onState: setConnection,
      pause,
    }).then((end) => {
      if (!end || signal.aborted) return;
      if (end.status === 401) {
        signOut('The API refused this key: it was revoked or has expired. Sign in again.');
        return;
      }
      setError(`The stream was refused (HTTP ${end.status}).`);
      setConnection('failed');
    });
    return () => {
      abort.abort();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [client, sessionId, stream, signOut]);

  return { stream, connection, error };
}
