import {
  CreateScheduleRequest,
  cronError,
  cronFireTimes,
  isTimeZone,
  shortestCronIntervalMs,
  UpdateScheduleRequest,
} from './schedules';

describe('cron expressions', () => {
  it.each([['* * * * * *'], ['0 9 * * 1-5'], ['*/15 * * * *'], ['@daily'], ['0 0 29 2 *']])(
    'accepts %s',
    (cron) => expect(cronError(cron)).toBeUndefined(),
  );

  it.each([
    ['every minute', /alias|fields/],
    ['61 * * * *', /range 0-59/],
    ['* * * * * * *', /fields/],
    ['* * * *', /fields/],
    ['0 0 31 2 *', /day of month/],
  ])('refuses %s', (cron, message) => expect(cronError(cron)).toMatch(message));

  it('reads an expression in its time zone', () => {
    const from = new Date('2026-07-01T00:00:00Z');
    expect(cronFireTimes('0 9 * * *', 'Europe/Paris', 1, from)[0].toISOString()).toBe(
      '2026-07-01T07:00:00.000Z',
    );
    expect(cronFireTimes('0 9 * * *', 'UTC', 1, from)[0].toISOString()).toBe('2026-07-01T09:00:00.000Z');
  });

  it('measures the shortest gap between fires', () => {
    expect(shortestCronIntervalMs('* * * * * *', 'UTC')).toBe(1000);
    expect(shortestCronIntervalMs('*/10 * * * * *', 'UTC')).toBe(10_000);
    expect(shortestCronIntervalMs('0,1 * * * *', 'UTC')).toBe(60_000);
    expect(shortestCronIntervalMs('0 9 * * *', 'UTC')).toBe(24 * 3600 * 1000);
  });
});

describe('time zones', () => {
  it.each(['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata'])('accepts %s', (tz) =>
    expect(isTimeZone(tz)).toBe(true),
  );
  it.each(['Mars/Olympus', '+01:00', 'GMT+25', ''])('refuses %j', (tz) => expect(isTimeZone(tz)).toBe(false));
});

describe('schedule requests', () => {
  const agentId = '00000000-0000-4000-8000-000000000000';

  it('accepts a full request and refuses unknown fields', () => {
    expect(
      CreateScheduleRequest.safeParse({
        agentId,
        cron: ' 0 9 * * 1-5 ',
        timezone: 'Europe/Paris',
        payload: { text: 'standup', metadata: { team: 'a' } },
        enabled: false,
      }),
    ).toMatchObject({ success: true, data: { cron: '0 9 * * 1-5' } });
    expect(CreateScheduleRequest.safeParse({ agentId, cron: '* * * * *', colour: 'red' }).success).toBe(
      false,
    );
    expect(
      CreateScheduleRequest.safeParse({ agentId, cron: '* * * * *', payload: { body: 'x' } }).success,
    ).toBe(false);
  });

  it('needs at least one field to change', () => {
    expect(UpdateScheduleRequest.safeParse({}).success).toBe(false);
    expect(UpdateScheduleRequest.safeParse({ enabled: false }).success).toBe(true);
    expect(UpdateScheduleRequest.safeParse({ timezone: 'Nowhere/Land' }).success).toBe(false);
  });
});
