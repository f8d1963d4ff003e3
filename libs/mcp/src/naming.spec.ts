import { HostAllowList } from '@switchboard/tools';
import { mcpNeedsApproval } from './tools';
import { checkedLookup } from './url';
import {
  MCP_SERVER_NAME,
  mcpToolName,
  namesMcpTools,
  offerable,
  sideEffectOf,
  splitMcpToolName,
} from './naming';

describe('MCP tool names', () => {
  it('namespaces a tool as <server>__<tool> and splits it back at the first __', () => {
    expect(mcpToolName('srv', 'add')).toBe('srv__add');
    expect(splitMcpToolName('srv__add')).toEqual({ server: 'srv', tool: 'add' });
    expect(splitMcpToolName('my_srv__do__it')).toEqual({ server: 'my_srv', tool: 'do__it' });
    expect(splitMcpToolName('word_count')).toBeNull();
    expect(splitMcpToolName('__x')).toBeNull();
    expect(splitMcpToolName('srv__')).toBeNull();
  });

  it.each(['srv', 'a', 'my-srv', 'my_srv', 'a1_b2-c3', 'x'.repeat(32)])('accepts the server name %s', (n) =>
    expect(MCP_SERVER_NAME.test(n)).toBe(true),
  );

  it.each(['', 'Srv', 'a__b', '_a', 'a_', 'a.b', 'a b', 'x'.repeat(33), 'ü'])(
    'refuses the server name %j',
    (n) => expect(MCP_SERVER_NAME.test(n)).toBe(false),
  );

  it('only an agent list with a namespaced name needs MCP', () => {
    expect(namesMcpTools(['word_count', 'current_time'])).toBe(false);
    expect(namesMcpTools(['word_count', 'srv__add'])).toBe(true);
  });

  it('offers only names a provider accepts', () => {
    expect(offerable('srv', 'add')).toBe(true);
    expect(offerable('srv', 'files.read')).toBe(false);
    expect(offerable('srv', 'x'.repeat(60))).toBe(false);
  });
});

describe('side-effect class from MCP annotations', () => {
  it.each([
    [{ readOnlyHint: true }, 'read_only'],
    [{ readOnlyHint: true, destructiveHint: true }, 'read_only'],
    [{}, 'destructive'],
    [undefined, 'destructive'],
    [{ readOnlyHint: false }, 'destructive'],
    [{ destructiveHint: true, openWorldHint: false }, 'destructive'],
    [{ destructiveHint: false }, 'network'],
    [{ destructiveHint: false, openWorldHint: true }, 'network'],
    [{ destructiveHint: false, openWorldHint: false }, 'local_write'],
  ] as const)('%j → %s', (annotations, expected) => {
    expect(sideEffectOf(annotations)).toBe(expected);
  });
});

describe('approval by the server setting', () => {
  it.each([
    ['side_effects', [false, true, true, true]],
    ['destructive_only', [false, false, false, true]],
    ['none', [false, false, false, false]],
  ] as const)('%s: read_only, local_write, network, destructive → %j', (approval, expected) => {
    const classes = ['read_only', 'local_write', 'network', 'destructive'] as const;
    expect(classes.map((c) => mcpNeedsApproval(c, approval))).toEqual(expected);
  });
});

describe('the connection-time address check', () => {
  const resolve = (allow: string[], host = 'localhost') =>
    new Promise<{ err: unknown; address: unknown }>((done) =>
      checkedLookup('srv', new HostAllowList(allow))(host, { all: true }, (err, address) =>
        done({ err, address }),
      ),
    );

  it('refuses a name that resolves to loopback, as a blocked_address tool error', async () => {
    const { err } = await resolve([]);
    expect(err).toMatchObject({
      kind: 'blocked_address',
      message: expect.stringContaining('localhost resolves to'),
    });
  });

  it('passes the checked addresses on when the name or its address is allowed', async () => {
    for (const allow of [['localhost'], ['127.0.0.1', '::1']]) {
      const { err, address } = await resolve(allow);
      expect(err).toBeNull();
      expect(address).toEqual(expect.arrayContaining([expect.objectContaining({ address: '127.0.0.1' })]));
    }
  });
});
