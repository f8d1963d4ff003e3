import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a service (Postgres, Redis), for fault tests that must not
 * disturb the shared service other test files use: `down()` behaves like the service restarting
 * (every open connection is reset and new ones are refused) for the processes that connect through
 * the proxy only; `up()` brings it back on the same port.
 */
export interface TcpProxy {
  /** The port the proxy listens on. */
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string;
  /** Resets every open connection and refuses new ones until `up()`. */
  down(): Promise<void>;
  /** Accepts connections again, on the same port. */
  up(): Promise<void>;
  /** Connections currently open through the proxy. */
  connections(): number;
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  /** Called once per connection; the function it returns sees every chunk the client sends upstream. */
  tap?: () => (chunk: Buffer) => void;
}

export async function startTcpProxy(
  target: { host: string; port: number },
  options: TcpProxyOptions = {},
): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const onConnection = (client: net.Socket) => {
    const upstream = net.connect(target.port, target.host);
    const feed = options.tap?.();
    sockets.add(client);
    sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    if (feed) {
      client.on('data', (chunk: Buffer) => {
        feed(chunk);
        if (!upstream.write(chunk)) client.pause();
      });
      upstream.on('drain', () => client.resume());
    } else {
      client.pipe(upstream);
    }
    upstream.pipe(client);
  };
  let server = net.createServer(onConnection);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  const port = await listen(0);
  let listening = true;

  const stop = async () => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // resetAndDestroy sends RST like a crashed server; destroy is the fallback on older Node.
    for (const s of sockets) {
      if (typeof s.resetAndDestroy === 'function') s.resetAndDestroy();
      else s.destroy();
    }
    sockets.clear();
    await closed;
  };

  return {
    port,
    rewrite(url: string) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    down: stop,
    async up() {
      if (listening) return;
      server = net.createServer(onConnection);
      await listen(port);
      listening = true;
    },
    connections: () => sockets.size / 2,
    close: stop,
  };
}
