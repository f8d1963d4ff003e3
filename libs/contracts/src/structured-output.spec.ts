import {
  ChatResponseFormat,
  checkStructuredAnswer,
  fromChatResponseFormat,
  fromTextFormat,
  responseFormatProblem,
  TextFormat,
  toTextFormat,
  type ResponseFormat,
} from './structured-output';

const person: ResponseFormat = {
  type: 'json_schema',
  name: 'person',
  schema: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      age: { type: 'integer' },
      email: { type: 'string', format: 'email' },
    },
    required: ['name', 'age'],
    additionalProperties: false,
  },
};

const schema = (s: Record<string, unknown>): ResponseFormat => ({
  type: 'json_schema',
  name: 's',
  schema: s,
});

describe('the wire formats', () => {
  it('Chat Completions and Responses spellings map to one stored format; text is none', () => {
    const chat = ChatResponseFormat.parse({
      type: 'json_schema',
      json_schema: {
        name: 'person',
        schema: person.type === 'json_schema' ? person.schema : {},
        strict: null,
      },
    });
    expect(fromChatResponseFormat(chat)).toEqual(person);
    expect(fromChatResponseFormat({ type: 'text' })).toBeNull();
    expect(fromChatResponseFormat(undefined)).toBeNull();
    expect(fromChatResponseFormat({ type: 'json_object' })).toEqual({ type: 'json_object' });
    const text = TextFormat.parse({
      type: 'json_schema',
      name: 'person',
      schema: { type: 'object' },
      strict: true,
    });
    expect(fromTextFormat(text)).toEqual({
      type: 'json_schema',
      name: 'person',
      schema: { type: 'object' },
      strict: true,
    });
    expect(toTextFormat(fromTextFormat(text))).toEqual(text);
    expect(toTextFormat(null)).toEqual({ type: 'text' });
  });

  it('refuses a json_schema without name or schema, a bad name, an unknown type', () => {
    expect(ChatResponseFormat.safeParse({ type: 'json_schema', json_schema: { schema: {} } }).success).toBe(
      false,
    );
    expect(ChatResponseFormat.safeParse({ type: 'json_schema', json_schema: { name: 'x' } }).success).toBe(
      false,
    );
    expect(
      ChatResponseFormat.safeParse({ type: 'json_schema', json_schema: { name: 'a b', schema: {} } }).success,
    ).toBe(false);
    expect(TextFormat.safeParse({ type: 'xml' }).success).toBe(false);
  });
});

describe('responseFormatProblem', () => {
  it('accepts usable schemas of every supported draft', () => {
    expect(responseFormatProblem(person)).toBeUndefined();
    expect(responseFormatProblem({ type: 'json_object' })).toBeUndefined();
    for (const $schema of [
      'http://json-schema.org/draft-07/schema#',
      'https://json-schema.org/draft/2019-09/schema',
      'https://json-schema.org/draft/2020-12/schema',
    ]) {
      expect(responseFormatProblem(schema({ $schema, type: 'object' }))).toBeUndefined();
    }
  });

  it.each([
    ['a keyword of the wrong type', { type: 'object', required: 'name' }, /required/],
    ['an unknown type', { type: 'objekt' }, /type/],
    ['an unknown keyword', { type: 'object', propertiez: {} }, /unknown keyword: "propertiez"/],
    [
      'an unsupported draft',
      { $schema: 'http://json-schema.org/draft-04/schema#' },
      /draft-04.*not supported/,
    ],
    ['a dangling $ref', { $ref: '#/definitions/nope' }, /resolve reference/],
  ])('refuses %s', (_, s, message) => {
    expect(responseFormatProblem(schema(s))).toMatch(message);
  });
});

describe('checkStructuredAnswer', () => {
  it('accepts a matching answer, trimmed, and one wrapped in a Markdown fence', () => {
    expect(checkStructuredAnswer(person, ' {"name":"Ada","age":36} \n')).toEqual({
      ok: true,
      text: '{"name":"Ada","age":36}',
      value: { name: 'Ada', age: 36 },
    });
    expect(checkStructuredAnswer(person, '```json\n{"name":"Ada","age":36}\n```')).toMatchObject({
      ok: true,
      text: '{"name":"Ada","age":36}',
    });
  });

  it('says what is wrong: not JSON, missing and mistyped properties, formats, extra properties', () => {
    expect(checkStructuredAnswer(person, 'Ada is 36')).toMatchObject({ ok: false, message: /not JSON/ });
    const wrong = checkStructuredAnswer(person, '{"age":"36","email":"nope","x":1}');
    expect(wrong.ok).toBe(false);
    const message = (wrong as { message: string }).message;
    expect(message).toContain("$ must have required property 'name'");
    expect(message).toContain('$.age must be integer');
    expect(message).toContain('$.email must match format "email"');
    expect(message).toContain('must NOT have additional properties');
    expect(checkStructuredAnswer(person, 'Here: {"name":"Ada","age":36}')).toMatchObject({ ok: false });
  });

  it('json_object: any object, nothing else', () => {
    expect(checkStructuredAnswer({ type: 'json_object' }, '{"a":[1]}')).toMatchObject({ ok: true });
    for (const text of ['[1]', '"a"', 'null', '3']) {
      expect(checkStructuredAnswer({ type: 'json_object' }, text)).toMatchObject({
        ok: false,
        message: 'the answer is JSON but not a JSON object',
      });
    }
  });
});
