import net from 'node:net';
import { startTcpProxy, type TcpProxy } from './tcp-proxy';

/** The fault-test proxy: forwards both ways, taps what clients send, goes down and comes back on its port. */
describe('startTcpProxy', () => {
  let echo: net.Server;
  let echoPort: number;
  let proxy: TcpProxy | undefined;

  beforeAll(async () => {
    // The proxy resets its upstream connections when it goes down or closes: an echo socket sees ECONNRESET.
    echo = net.createServer((s) => s.on('error', () => undefined).pipe(s));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    echoPort = (echo.address() as net.AddressInfo).port;
  });

  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => echo.close(() => resolve()));
  });

  /** Sends `text` through the proxy and resolves with what came back. */
  const roundTrip = (port: number, text: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let got = '';
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        got += chunk.toString();
        if (got.length >= text.length) {
          socket.end();
          resolve(got);
        }
      });
      socket.write(text);
    });

  it('forwards both ways and shows the tap every byte a client sends', async () => {
    const seen: string[] = [];
    proxy = await startTcpProxy(
      { host: '127.0.0.1', port: echoPort },
      { tap: () => (chunk) => seen.push(chunk.toString()) },
    );
    expect(await roundTrip(proxy.port, 'hello')).toBe('hello');
    expect(seen.join('')).toBe('hello');
  });

  it('refuses connections while down and serves again on the same port when up', async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: echoPort });
    const port = proxy.port;
    await proxy.down();
    await expect(roundTrip(port, 'x')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await proxy.up();
    expect(proxy.port).toBe(port);
    expect(await roundTrip(port, 'back')).toBe('back');
  });
});
