import { defaultServiceName } from './service-name';

describe('defaultServiceName', () => {
  it('names each app from its entry script, source or compiled', () => {
    expect(defaultServiceName('/srv/switchboard/apps/gateway/src/main.ts')).toBe('switchboard-gateway');
    expect(defaultServiceName('/app/dist/apps/harness-worker/main.js')).toBe('switchboard-harness-worker');
    expect(defaultServiceName('apps\\hooks-worker\\src\\main.ts')).toBe('switchboard-hooks-worker');
  });

  it('names anything else switchboard', () => {
    expect(defaultServiceName('/srv/switchboard/scripts/bench.ts')).toBe('switchboard');
    expect(defaultServiceName('')).toBe('switchboard');
  });
});
