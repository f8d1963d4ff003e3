import { askedBy, authorityBadge, originInWords, type Provenance } from './provenance';

const p = (over: Partial<Provenance>): Provenance => ({
  messageId: '00000000-0000-4000-8000-000000000000',
  kind: 'operator_prompt',
  origin: { kind: 'operator' },
  trust: 'trusted_operator',
  authorityClass: 'operator_instruction',
  ...over,
});

describe('provenance in words', () => {
  it('names the kind and the origin', () => {
    expect(askedBy(p({ origin: { kind: 'operator', actorId: 'key_1' } }))).toBe(
      'an operator prompt from the operator (key_1)',
    );
    expect(
      askedBy(
        p({
          kind: 'webhook_event',
          origin: { kind: 'webhook', source: 'github', eventType: 'push' },
          authorityClass: 'external_evidence',
        }),
      ),
    ).toBe('a webhook event from webhook source github (push)');
    expect(askedBy(p({ kind: 'timer_tick', origin: { kind: 'timer', scheduleId: 's1' } }))).toBe(
      'a timer tick from schedule s1',
    );
  });

  it.each<[Provenance['origin'], string]>([
    [{ kind: 'operator' }, 'the operator'],
    [{ kind: 'channel', channelId: 'c1', senderId: 'u1' }, 'channel c1, sender u1'],
    [{ kind: 'webhook', source: 'test' }, 'webhook source test'],
    [{ kind: 'callback', triggerId: 't1' }, 'trigger t1'],
    [{ kind: 'system', subsystem: 'work-items' }, 'the runtime (work-items)'],
    [{ kind: 'task', taskId: 'k1' }, 'sub-agent task k1'],
  ])('origin %o reads %s', (origin, words) => expect(originInWords(origin)).toBe(words));

  it('marks external evidence as asked by external content', () => {
    expect(authorityBadge('external_evidence')).toMatchObject({
      tone: 'bad',
      title: expect.stringMatching(/external content/),
    });
    expect(authorityBadge('operator_instruction').tone).toBe('ok');
  });
});
