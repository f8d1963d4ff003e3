import { fileKey, isOwnUrl, summariseCpuProfile, type CpuProfile } from './cpu-profile';

const ROOT = 'file:///repo';
const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

/**
 * (root) → handler (ours) → pg's parseRow; (root) → (idle); (root) → (garbage collector).
 * Samples every 100 µs from t = 1000: handler, parseRow, parseRow, idle, gc, handler.
 */
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 4, 5] },
    { id: 2, callFrame: frame('handle', `${ROOT}/apps/gateway/src/api/x.ts`, 9), children: [3] },
    { id: 3, callFrame: frame('parseRow', `${ROOT}/node_modules/pg/lib/result.js`, 62) },
    { id: 4, callFrame: frame('(idle)') },
    { id: 5, callFrame: frame('(garbage collector)') },
  ],
  startTime: 1000,
  endTime: 1600,
  samples: [2, 3, 3, 4, 5, 2],
  timeDeltas: [0, 100, 100, 100, 100, 100],
};

describe('summariseCpuProfile', () => {
  it('sums self time per function, per file or package, and per innermost own frame, idle left out', () => {
    const s = summariseCpuProfile(profile);
    expect(s.busyMs).toBe(0.5);
    expect(s.byFunction).toEqual([
      ['handle (apps/gateway/src/api/x.ts:10)', 0.2],
      ['parseRow (npm:pg:63)', 0.2],
      ['(garbage collector)', 0.1],
    ]);
    expect(s.byFile).toEqual([
      ['apps/gateway/src/api/x.ts', 0.2],
      ['npm:pg', 0.2],
      ['(garbage collector)', 0.1],
    ]);
    expect(s.byOwnCaller).toEqual([
      ['handle (apps/gateway/src/api/x.ts:10)', 0.4],
      ['(none)', 0.1],
    ]);
  });

  it('counts only the samples inside the window, cut at its end', () => {
    const s = summariseCpuProfile(profile, { fromUs: 1100, toUs: 1260 });
    // parseRow at 1100 (100 µs) and at 1200 (cut to 60 µs).
    expect(s.busyMs).toBe(0.2);
    expect(s.byFunction).toEqual([['parseRow (npm:pg:63)', 0.2]]);
  });

  it('names files', () => {
    expect(fileKey(`${ROOT}/node_modules/@nestjs/core/router.js`, 'f')).toBe('npm:@nestjs/core');
    expect(fileKey('node:events', 'emit')).toBe('node:events');
    expect(fileKey('', 'writev')).toBe('(native)');
    expect(isOwnUrl(`${ROOT}/libs/store/src/sql.ts`)).toBe(true);
    expect(isOwnUrl(`${ROOT}/node_modules/x/libs/y/src/z.js`)).toBe(false);
  });
});
