import { randomBytes, randomUUID } from 'node:crypto';
import IORedis from 'ioredis';
import { createLogger } from '@switchboard/observability';
import { testRedisUrl, waitFor } from '@switchboard/testing';
import {
  controlChannel,
  ControlSubscriber,
  decodeControl,
  sendControl,
  type ControlMessage,
} from './control';

/** The control channel on the real Redis (docs/adr/0014): one channel per worker, at most once. */
jest.setTimeout(120_000);

const logger = createLogger({ service: 'test', level: 'silent' });

describe('control channel', () => {
  const url = testRedisUrl();
  const prefix = `sbt_ctl_${randomBytes(4).toString('hex')}`;
  let command: IORedis;

  beforeAll(() => {
    command = new IORedis(url, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await command.quit();
  });

  it('reaches the named worker only, in order, and drops what is not a control message', async () => {
    const heard: Record<string, ControlMessage[]> = { a: [], b: [] };
    const a = ControlSubscriber.connect(url, { prefix, workerId: 'a', logger }, (m) => heard.a.push(m));
    const b = ControlSubscriber.connect(url, { prefix, workerId: 'b', logger }, (m) => heard.b.push(m));
    await Promise.all([a.ready, b.ready]);
    try {
      const sessionId = randomUUID();
      const turnId = randomUUID();
      await command.publish(controlChannel(prefix, 'a'), 'not json');
      await command.publish(controlChannel(prefix, 'a'), JSON.stringify({ v: 2, type: 'cancel', sessionId }));
      expect(
        await sendControl(command, { prefix, logger }, 'a', { v: 1, type: 'cancel', turnId, sessionId }),
      ).toBe(true);
      expect(
        await sendControl(command, { prefix, logger }, 'a', { v: 1, type: 'interject', sessionId }),
      ).toBe(true);
      await waitFor(() => (heard.a.length === 2 ? true : undefined), { what: 'two messages' });
      expect(heard.a).toEqual([
        { v: 1, type: 'cancel', turnId, sessionId },
        { v: 1, type: 'interject', sessionId },
      ]);
      expect(heard.b).toEqual([]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('never throws when Redis is away: the request is in Postgres already', async () => {
    const down = new IORedis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    expect(
      await sendControl(down, { prefix, logger }, 'a', { v: 1, type: 'interject', sessionId: 's' }),
    ).toBe(false);
    down.disconnect();
  });

  it('decodes only well-formed messages', () => {
    expect(decodeControl('{"v":1,"type":"cancel","sessionId":"s"}')).toBeUndefined();
    expect(decodeControl('{"v":1,"type":"stop","sessionId":"s","turnId":"t"}')).toBeUndefined();
    expect(decodeControl('null')).toBeUndefined();
    expect(decodeControl('{"v":1,"type":"interject","sessionId":"s"}')).toEqual({
      v: 1,
      type: 'interject',
      sessionId: 's',
    });
  });
});
