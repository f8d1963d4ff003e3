import { MODEL_ROUTES } from '@switchboard/contracts';
import { effectiveModels, resolveModelList, resolveModelRef } from './routes';

const DEFAULT = 'scripted/demo';

describe('resolveModelRef', () => {
  it.each(['openai/gpt-4o', 'anthropic/claude-sonnet-5-5', 'openai-chat/llama3.1:8b', 'scripted/demo'])(
    'returns the concrete reference %s unchanged, with no route',
    (ref) => {
      expect(resolveModelRef(ref, { chat: 'openai/gpt-4o-mini' }, DEFAULT)).toEqual({ ref });
    },
  );

  it("resolves a hint to the tenant's route", () => {
    expect(resolveModelRef('hint:coding', { coding: 'anthropic/claude-sonnet-5-5' }, DEFAULT)).toEqual({
      ref: 'anthropic/claude-sonnet-5-5',
      route: 'coding',
    });
  });

  it.each(MODEL_ROUTES.map((r) => [r]))(
    'resolves hint:%s to the default model when the route is unset',
    (route) => {
      expect(resolveModelRef(`hint:${route}`, {}, DEFAULT)).toEqual({ ref: DEFAULT, route });
    },
  );

  it('uses only the named route, never another one', () => {
    const routes = { chat: 'openai/gpt-4o-mini', reasoning: 'openai/o3' };
    expect(resolveModelRef('hint:burst', routes, DEFAULT)).toEqual({ ref: DEFAULT, route: 'burst' });
    expect(resolveModelRef('hint:reasoning', routes, DEFAULT)).toEqual({
      ref: 'openai/o3',
      route: 'reasoning',
    });
  });

  it('does not follow a route that points at another hint', () => {
    expect(resolveModelRef('hint:chat', { chat: 'hint:coding', coding: 'openai/gpt-4o' }, DEFAULT)).toEqual({
      ref: DEFAULT,
      route: 'chat',
    });
  });

  it('ignores an empty route value', () => {
    expect(resolveModelRef('hint:chat', { chat: '' }, DEFAULT)).toEqual({ ref: DEFAULT, route: 'chat' });
  });

  it('resolves a hint naming an unknown route to the default model, with no route', () => {
    expect(resolveModelRef('hint:nope', { chat: 'openai/gpt-4o' }, DEFAULT)).toEqual({ ref: DEFAULT });
    expect(resolveModelRef('hint:', {}, DEFAULT)).toEqual({ ref: DEFAULT });
    // Not an own route name, even though it is a property of every object.
    expect(resolveModelRef('hint:constructor', {}, DEFAULT)).toEqual({ ref: DEFAULT });
  });

  it('treats only the exact lower-case prefix as a hint', () => {
    expect(resolveModelRef('HINT:chat', { chat: 'openai/gpt-4o' }, DEFAULT)).toEqual({ ref: 'HINT:chat' });
  });
});

describe('resolveModelList', () => {
  it('resolves a primary and its fallbacks in order', () => {
    expect(
      resolveModelList(
        ['hint:coding', 'openai/gpt-4o', 'hint:burst'],
        { coding: 'anthropic/claude-sonnet-5-5', burst: 'openai-chat/llama3.1:8b' },
        DEFAULT,
      ),
    ).toEqual([
      { ref: 'anthropic/claude-sonnet-5-5', route: 'coding' },
      { ref: 'openai/gpt-4o' },
      { ref: 'openai-chat/llama3.1:8b', route: 'burst' },
    ]);
  });

  it('keeps the first of several entries that resolve to one model', () => {
    expect(
      resolveModelList(
        ['openai/gpt-4o', 'hint:chat', 'hint:reasoning', 'hint:burst', 'hint:agentic', 'openai/gpt-4o'],
        { chat: 'openai/gpt-4o', reasoning: 'openai/o3', agentic: 'openai/o3' },
        DEFAULT,
      ),
    ).toEqual([
      { ref: 'openai/gpt-4o' },
      { ref: 'openai/o3', route: 'reasoning' },
      { ref: DEFAULT, route: 'burst' },
    ]);
  });

  it('drops unset hints that fall back to a default model already in the list', () => {
    expect(resolveModelList([DEFAULT, 'hint:chat', 'hint:coding'], {}, DEFAULT)).toEqual([{ ref: DEFAULT }]);
  });

  it('returns an empty list for no references', () => {
    expect(resolveModelList([], { chat: 'openai/gpt-4o' }, DEFAULT)).toEqual([]);
  });
});

describe('effectiveModels (docs/adr/0059)', () => {
  const sees = (ref: string) => !ref.includes('3.5');
  const routes = { chat: 'openai/gpt-4o-mini', vision: 'anthropic/claude-sonnet-4-5' };

  it('resolves the agent model and fallbacks through the routes when the turn has no image', () => {
    expect(
      effectiveModels(['hint:chat', 'openai/gpt-3.5-turbo'], routes, 'scripted/demo', { takesImages: sees }),
    ).toEqual({
      model: { ref: 'openai/gpt-4o-mini', route: 'chat' },
      fallbackModels: [{ ref: 'openai/gpt-3.5-turbo' }],
    });
  });

  it('puts the vision route first for image input and drops text-only fallbacks', () => {
    expect(
      effectiveModels(['openai/gpt-3.5-turbo', 'hint:chat'], routes, 'scripted/demo', {
        images: true,
        takesImages: sees,
      }),
    ).toEqual({
      model: { ref: 'anthropic/claude-sonnet-4-5', route: 'vision' },
      fallbackModels: [{ ref: 'openai/gpt-4o-mini', route: 'chat' }],
    });
  });

  it("keeps the agent's models for image input without a usable vision route", () => {
    expect(
      effectiveModels(['openai/gpt-4o'], { vision: 'openai/gpt-3.5-turbo' }, 'x/y', {
        images: true,
        takesImages: sees,
      }),
    ).toEqual({
      model: { ref: 'openai/gpt-4o' },
      fallbackModels: [],
    });
  });
});
